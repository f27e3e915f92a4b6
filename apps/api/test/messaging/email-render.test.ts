// Rendering an Email for sending: the body HTML-escapes every interpolated value (the preview
// route shows the same), the other fields stay text, trait values are never parsed as Liquid.
import type { EmailTemplate } from "@tidings/schema";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RenderScope } from "../../src/templates/liquid.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { bearer, request } from "../support/http.ts";
import { renderDefinition, renderEmail } from "../support/render.ts";

const hostile = {
  id: "u1",
  firstName: "<script>alert(1)</script>",
  company: "Tom & Jerry's",
  math: "{{ 7*7 }}",
  filter: "{{ 7 | plus: 1 }}",
  tag: "{% if true %}evaluated{% endif %}",
  bio: "<b>trusted</b>",
};
const scope: RenderScope = {
  user: hostile,
  workspace: { id: "w1", name: "Acme" },
  unsubscribe_url: "https://mail.acme.test/unsub?token=t&g=1",
};
const email = (fields: Partial<EmailTemplate> = {}): EmailTemplate => ({
  type: "Email",
  from: "Acme <hello@acme.test>",
  subject: "Hi",
  body: "<p>Hi</p>",
  ...fields,
});

describe("renderEmail", () => {
  it("HTML-escapes every interpolated value of the body, and only of the body", async () => {
    const out = await renderEmail(
      email({
        from: "{{ user.company }} <hello@acme.test>",
        subject: "Hi {{ user.firstName }} from {{ user.company }}",
        body: "<p>Hi {{ user.firstName }} of {{ user.company }}</p><p>{% echo user.firstName %}</p>",
        replyTo: "{{ user.company }}@acme.test",
        headers: { "X-Company": "{{ user.company }}" },
      }),
      scope,
    );
    expect(out.html).toBe(
      "<p>Hi &lt;script&gt;alert(1)&lt;/script&gt; of Tom &amp; Jerry&#39;s</p><p>&lt;script&gt;alert(1)&lt;/script&gt;</p>",
    );
    expect(out.from).toBe("Tom & Jerry's <hello@acme.test>");
    expect(out.subject).toBe("Hi <script>alert(1)</script> from Tom & Jerry's");
    expect(out.replyTo).toBe("Tom & Jerry's@acme.test");
    expect(out.headers).toEqual({ "X-Company": "Tom & Jerry's" });
  });

  it("never evaluates Liquid found in trait values", async () => {
    const out = await renderEmail(
      email({ subject: "{{ user.math }} {{ user.filter }}", body: "<p>{{ user.math }}|{{ user.filter }}|{{ user.tag }}</p>" }),
      scope,
    );
    expect(out.html).toBe("<p>{{ 7*7 }}|{{ 7 | plus: 1 }}|{% if true %}evaluated{% endif %}</p>");
    expect(out.subject).toBe("{{ 7*7 }} {{ 7 | plus: 1 }}");
    expect(out.text).toBe("{{ 7*7 }}|{{ 7 | plus: 1 }}|{% if true %}evaluated{% endif %}");
    // The same expressions written in the template itself are evaluated: the literal above is the data's doing.
    const template = await renderEmail(email({ body: "{{ 7 | plus: 1 }}{% if true %}!{% endif %}" }), scope);
    expect(template.html).toBe("8!");
  });

  it("lets an admin output trusted HTML with `| raw`, and does not escape `| escape` twice", async () => {
    const out = await renderEmail(
      email({ body: "{{ user.bio | raw }}|{{ user.bio | escape }}|{{ user.company | escape_once }}|{{ '<i>x</i>' }}" }),
      scope,
    );
    expect(out.html).toBe("<b>trusted</b>|&lt;b&gt;trusted&lt;/b&gt;|Tom &amp; Jerry&#39;s|&lt;i&gt;x&lt;/i&gt;");
  });

  it("derives the plain-text part from the HTML", async () => {
    const out = await renderEmail(
      email({
        body: '<html><head><style>p { color: red }</style></head><body><h1>Welcome</h1><p>Hi {{ user.firstName }},</p><img src="https://t.test/pixel.gif" alt=""><p><a href="{{ unsubscribe_url }}">Unsubscribe</a></p></body></html>',
      }),
      scope,
    );
    expect(out.text).toBe("WELCOME\n\nHi <script>alert(1)</script>,\n\nUnsubscribe [https://mail.acme.test/unsub?token=t&g=1]");
  });

  it("leaves out optional fields that render empty", async () => {
    const out = await renderEmail(email({ replyTo: "{{ user.nope }}", cc: " ", headers: {} }), scope);
    expect(out).toEqual({ from: "Acme <hello@acme.test>", subject: "Hi", html: "<p>Hi</p>", text: "Hi" });
  });

  it("throws the preview's 400 naming the field on a Liquid error", async () => {
    await expect(renderEmail(email({ body: "{{ user.id | nope }}" }), scope)).rejects.toMatchObject({
      issues: [expect.objectContaining({ path: "definition.body" })],
    });
  });
});

describe("renderDefinition for other channels", () => {
  it("does not HTML-escape Sms, MobilePush and Webhook fields", async () => {
    expect(await renderDefinition({ type: "Sms", body: "{{ user.company }} {{ user.bio }}" }, scope)).toEqual({
      body: "Tom & Jerry's <b>trusted</b>",
    });
    expect(
      await renderDefinition({ type: "Webhook", url: "https://h.test", method: "POST", body: '{"c": "{{ user.company }}"}' }, scope),
    ).toMatchObject({ body: '{"c": "Tom & Jerry\'s"}' });
  });
});

describe("the render preview", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it("shows the Email body exactly as it is sent", async () => {
    const definition = email({
      subject: "Hi {{ user.company }}",
      body: "<p>{{ user.firstName }} {{ user.filter }} {{ user.bio | raw }}</p>",
    });
    const res = await request(t.url, "POST", "/api/admin/content/templates/render", {
      headers: bearer(t.workspace.adminKey),
      body: { definition, user: hostile },
    });
    expect(res.status).toBe(200);
    const sent = await renderEmail(definition, { ...scope, workspace: { id: t.workspace.id, name: "ignored" } });
    expect(res.body.rendered.body).toBe("<p>&lt;script&gt;alert(1)&lt;/script&gt; {{ 7 | plus: 1 }} <b>trusted</b></p>");
    expect(res.body.rendered.body).toBe(sent.html);
    expect(res.body.rendered.subject).toBe("Hi Tom & Jerry's");
  });
});
