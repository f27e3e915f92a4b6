import { randomUUID } from "node:crypto";
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyUnsubscribeToken } from "../../src/subscription-groups/unsubscribe-token.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { basic, bearer, request } from "../support/http.ts";

const PATH = "/api/admin/content/templates";
const PUBLIC_URL = "https://mail.acme.test/tidings";
let t: TestApp;
const admin = () => bearer(t.workspace.adminKey);
const render = (body: Record<string, unknown>) => request(t.url, "POST", `${PATH}/render`, { headers: admin(), body });

beforeAll(async () => {
  t = await createTestApp({ publicUrl: PUBLIC_URL });
  const identify = await request(t.url, "POST", "/api/public/apps/identify", {
    headers: basic(t.workspace.writeKey),
    body: { userId: "ada", messageId: randomUUID(), traits: { firstName: "Ada", email: "ada@example.test", plan: "pro" } },
  });
  expect(identify.status).toBeLessThan(300);
});
afterAll(async () => {
  await t.close();
});

describe("POST /api/admin/content/templates/render", () => {
  it("builds links on TIDINGS_PUBLIC_URL whatever Host the request names", async () => {
    // node:http, because fetch does not let a caller set Host.
    const body = JSON.stringify({ definition: { type: "Sms", body: "{{ unsubscribe_url }}" }, user: { id: "u1" } });
    const { port } = new URL(t.url);
    const text = await new Promise<string>((resolve, reject) => {
      const req = http.request(
        {
          host: "127.0.0.1",
          port,
          method: "POST",
          path: `${PATH}/render`,
          headers: { ...admin(), host: "evil.example", "content-type": "application/json" },
        },
        (res) => {
          let out = "";
          res.on("data", (d) => (out += d));
          res.on("end", () => resolve(out));
        },
      );
      req.on("error", reject);
      req.end(body);
    });
    expect(JSON.parse(text).rendered.body).toMatch(
      new RegExp(`^${PUBLIC_URL.replace(/\./g, "\\.")}/api/public/subscriptions/unsubscribe\\?token=`),
    );
  });

  it("renders a stored template for an identified user (templateId + userId)", async () => {
    const stored = await request(t.url, "PUT", PATH, {
      headers: admin(),
      body: {
        workspaceId: t.workspace.id,
        name: "welcome",
        definition: {
          type: "Email",
          from: "Acme <hello@acme.test>",
          subject: "Welcome {{ user.firstName | upcase }} ({{ user.id }})",
          body: 'Plan {{ user.plan }} in {{ workspace.name }}. <a href="{{ unsubscribe_url }}">Unsubscribe</a>',
          headers: { "X-User": "{{ user.email }}" },
        },
        draft: { type: "Sms", body: "Draft for {{ user.firstName }}" },
      },
    });
    expect(stored.status).toBe(200);
    const workspace = await t.ctx.db.prisma.workspace.findUniqueOrThrow({ where: { id: t.workspace.id } });

    const res = await render({ templateId: stored.body.id, userId: "ada" });
    expect(res.status).toBe(200);
    expect(res.body.type).toBe("Email");
    expect(res.body.rendered).toMatchObject({
      from: "Acme <hello@acme.test>",
      subject: "Welcome ADA (ada)",
      headers: { "X-User": "ada@example.test" },
    });
    expect(res.body.rendered.body).toContain(`Plan pro in ${workspace.name}.`);

    const href = /href="([^"]+)"/.exec(res.body.rendered.body)?.[1];
    const link = new URL(href!);
    // TIDINGS_PUBLIC_URL (path kept), never the request's Host.
    expect(`${link.origin}${link.pathname}`).toBe(`${PUBLIC_URL}/api/public/subscriptions/unsubscribe`);
    const verified = verifyUnsubscribeToken(t.ctx.config, link.searchParams.get("token")!);
    expect(verified).toMatchObject({ ok: true, payload: { workspaceId: t.workspace.id, userId: "ada" } });

    const draft = await render({ templateId: stored.body.id, source: "draft", userId: "ada" });
    expect(draft.status).toBe(200);
    expect(draft.body).toEqual({ type: "Sms", rendered: { body: "Draft for Ada" } });
  });

  it("renders an inline definition for an inline user, with event and missing traits as empty", async () => {
    const res = await render({
      definition: {
        type: "Webhook",
        url: "https://hooks.test/users/{{ user.id }}",
        method: "POST",
        headers: { "X-Event": "{{ event.event }}" },
        body: '{"total": {{ event.properties.total }}, "missing": "{{ user.nope }}"}',
      },
      user: { id: "u-42", firstName: "Grace" },
      event: { event: "Order Completed", properties: { total: 42.5 } },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      type: "Webhook",
      rendered: {
        url: "https://hooks.test/users/u-42",
        method: "POST",
        headers: { "X-Event": "Order Completed" },
        body: '{"total": 42.5, "missing": ""}',
      },
      unresolved: [{ path: "definition.body", variable: "user.nope" }],
    });
  });

  it("binds the unsubscribe link to the subscription group when one is given", async () => {
    const group = await t.ctx.db.prisma.subscriptionGroup.create({
      data: { workspaceId: t.workspace.id, name: "newsletter", channel: "Email", type: "OptOut" },
    });
    const res = await render({
      definition: { type: "Sms", body: "{{ unsubscribe_url }}" },
      user: { id: "u1" },
      subscriptionGroupId: group.id,
    });
    expect(res.status).toBe(200);
    const token = new URL(res.body.rendered.body).searchParams.get("token")!;
    expect(verifyUnsubscribeToken(t.ctx.config, token)).toMatchObject({
      ok: true,
      payload: { userId: "u1", subscriptionGroupId: group.id },
    });
    const unknown = await render({ definition: { type: "Sms", body: "x" }, user: { id: "u1" }, subscriptionGroupId: randomUUID() });
    expect(unknown.status).toBe(404);
  });

  it("answers 404 for an unknown user or template", async () => {
    const user = await render({ definition: { type: "Sms", body: "x" }, userId: "nobody" });
    expect(user.status).toBe(404);
    expect(user.body.error.code).toBe("NOT_FOUND");
    const template = await render({ templateId: randomUUID(), user: { id: "u1" } });
    expect(template.status).toBe(404);
  });

  it("answers 400 when the template has no such version", async () => {
    const stored = await request(t.url, "PUT", PATH, {
      headers: admin(),
      body: { workspaceId: t.workspace.id, name: "draft-only", draft: { type: "Sms", body: "x" } },
    });
    const res = await render({ templateId: stored.body.id, user: { id: "u1" } });
    expect(res.status).toBe(400);
    expect(res.body.error.issues[0].path).toBe("source");
  });

  it("answers 400 naming the field on Liquid errors, and refuses file access", async () => {
    const syntax = await render({ definition: { type: "MobilePush", title: "ok", body: "{{ user.id" }, user: { id: "u1" } });
    expect(syntax.status).toBe(400);
    expect(syntax.body.error.issues).toEqual([{ path: "definition.body", message: expect.stringContaining("not closed") }]);
    const include = await render({ definition: { type: "Sms", body: "{% include '/etc/passwd' %}" }, user: { id: "u1" } });
    expect(include.status).toBe(400);
    expect(include.body.error.issues[0].path).toBe("definition.body");
    expect(JSON.stringify(include.body)).not.toContain("root:");
    const huge = await render({ definition: { type: "Sms", body: "{% for i in (1..100000000) %}x{% endfor %}" }, user: { id: "u1" } });
    expect(huge.status).toBe(400);
  });

  it("requires exactly one of templateId/definition and of userId/user", async () => {
    const neither = await render({ user: { id: "u1" } });
    expect(neither.status).toBe(400);
    expect(neither.body.error.issues[0].path).toBe("templateId");
    const both = await render({ templateId: randomUUID(), definition: { type: "Sms", body: "x" }, userId: "ada" });
    expect(both.status).toBe(400);
    expect(both.body.error.issues[0].path).toBe("definition");
    const noUser = await render({ definition: { type: "Sms", body: "x" } });
    expect(noUser.status).toBe(400);
    expect(noUser.body.error.issues[0].path).toBe("userId");
    const userWithoutId = await render({ definition: { type: "Sms", body: "x" }, user: { firstName: "x" } });
    expect(userWithoutId.status).toBe(400);
    expect(userWithoutId.body.error.issues[0].path).toBe("user.id");
  });
});
