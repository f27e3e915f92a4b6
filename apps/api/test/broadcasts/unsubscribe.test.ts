// The unsubscribe link of an Email broadcast within an OptOut group, end to end: the link the
// rendered message carries (Log provider: no SMTP configured, the delivery row keeps what would
// have been sent) opens a confirmation page without any key; an RFC 8058 one-click POST
// unsubscribes; the next broadcast skips the user. Forged and expired tokens get a 400 page.
// Also: hostile trait values arrive HTML-escaped and never evaluated in the stored Email body.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signUnsubscribeToken, UNSUBSCRIBE_PATH } from "../../src/subscription-groups/unsubscribe-token.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { request } from "../support/http.ts";
import { identify, segmentWorld, type SegmentWorld } from "../segments/support.ts";
import { broadcastEnd, plan } from "./support.ts";

let t: TestApp;
let db: pg.Client;

beforeAll(async () => {
  t = await createTestApp();
  db = new pg.Client({ connectionString: t.databaseUrl });
  await db.connect();
});
afterAll(async () => {
  await db?.end();
  await t?.close();
});

const newsletter = {
  type: "Email",
  from: "news@acme.test",
  subject: "News for {{ user.nickname }}",
  body: '<p>Hello {{ user.name }} ({{ user.nickname }})</p><p><a href="{{ unsubscribe_url }}">Unsubscribe</a></p>',
};

async function broadcast(w: SegmentWorld, name: string, groupId: string) {
  const res = await w.admin("POST", "/api/admin/broadcasts/execute", {
    broadcastName: name,
    segmentDefinition: plan("pro"),
    messageTemplateDefinition: newsletter,
    subscriptionGroupId: groupId,
  });
  const b = await broadcastEnd(w, res.broadcastId);
  expect(b.status).toBe("Completed");
  return b;
}

/** The stored delivery row of one user in one broadcast (read straight from PostgreSQL). */
async function deliveryRow(broadcastId: string, userId: string) {
  const { rows } = await db.query<{ status: string; reason: string | null; contact: string | null; rendered: any }>(
    "SELECT status, reason, contact, rendered FROM deliveries WHERE broadcast_id = $1 AND user_id = $2",
    [broadcastId, userId],
  );
  expect(rows).toHaveLength(1);
  return rows[0]!;
}

const html = (res: { status: number; headers: Headers }) => res.headers.get("content-type") ?? "";

describe("unsubscribe links of an Email broadcast", () => {
  let w: SegmentWorld;
  let group: { id: string; name: string };
  let first: any;

  beforeAll(async () => {
    w = await segmentWorld(t);
    const now = Date.now();
    await w.send([
      identify("amy", { plan: "pro", name: "Amy", nickname: "amy", email: "amy@example.test" }, now - 1000),
      identify("ben", { plan: "pro", name: "Ben", nickname: "ben", email: "ben@example.test" }, now - 1000),
      identify(
        "mal",
        { plan: "pro", name: "<script>alert(1)</script>", nickname: "{{ 7 | plus: 1 }}", email: "mal@example.test" },
        now - 1000,
      ),
    ]);
    group = await w.admin("PUT", "/api/admin/subscription-groups", { name: "Weekly <news> & tips", channel: "Email", type: "OptOut" });
    first = await broadcast(w, "weekly-1", group.id);
    expect(first.counts).toEqual({ audience: 3, sent: 3, failed: 0, skipped: 0, pending: 0, deferred: 0 });
  });

  it("carries a link that shows a confirmation page, and a one-click POST unsubscribes; the next broadcast skips the user", async () => {
    const row = await deliveryRow(first.id, "ben");
    expect(row).toMatchObject({ status: "Sent", contact: "ben@example.test" });
    expect(row.rendered).toMatchObject({ from: "news@acme.test", subject: "News for ben" });
    const href = /href="([^"]+)"/.exec(row.rendered.html)?.[1];
    expect(href, row.rendered.html).toBeDefined();
    const link = new URL(href!.replaceAll("&amp;", "&"));
    expect(`${link.origin}${link.pathname}`).toBe(`${t.ctx.config.publicUrl}${UNSUBSCRIBE_PATH}`);
    const token = link.searchParams.get("token")!;
    expect(token).toBeTruthy();
    // The plain-text part carries the link too.
    expect(row.rendered.text).toContain(token);

    // No API key: the token is the authority.
    const pageRes = await request(t.url, "GET", `${UNSUBSCRIBE_PATH}?token=${encodeURIComponent(token)}`);
    expect(pageRes.status, pageRes.text).toBe(200);
    expect(html(pageRes)).toMatch(/^text\/html/);
    expect(pageRes.text).toContain("Weekly &#60;news&#62; &#38; tips");
    expect(pageRes.text).not.toContain("Weekly <news>");
    expect(pageRes.text).toMatch(/<form[^>]*method="post"/i);
    // The form posts back to the same link.
    expect(pageRes.text).toContain(`action="${t.ctx.config.publicUrl}${UNSUBSCRIBE_PATH}?token=${encodeURIComponent(token)}"`);
    // Showing the page changes nothing.
    const before = await w.admin("GET", `/api/admin/subscription-groups/${group.id}/assignments`);
    expect(before.items).toEqual([]);

    // RFC 8058 one-click: a form POST with List-Unsubscribe=One-Click.
    const oneClick = await request(t.url, "POST", `${UNSUBSCRIBE_PATH}?token=${encodeURIComponent(token)}`, {
      headers: { "content-type": "application/x-www-form-urlencoded" },
      raw: "List-Unsubscribe=One-Click",
    });
    expect(oneClick.status, oneClick.text).toBe(200);
    expect(html(oneClick)).toMatch(/^text\/html/);
    expect(oneClick.text).toContain("Weekly &#60;news&#62; &#38; tips");

    const after = await w.admin("GET", `/api/admin/subscription-groups/${group.id}/assignments`);
    expect(after.items).toEqual([{ userId: "ben", subscribed: false, updatedAt: expect.any(Number) }]);

    const second = await broadcast(w, "weekly-2", group.id);
    expect(second.counts).toEqual({ audience: 3, sent: 2, failed: 0, skipped: 1, pending: 0, deferred: 0 });
    expect(await deliveryRow(second.id, "ben")).toMatchObject({ status: "Skipped", reason: "unsubscribed", rendered: null });
    expect(await deliveryRow(second.id, "amy")).toMatchObject({ status: "Sent" });
  });

  it("answers a forged or expired token with a 400 page and unsubscribes no one", async () => {
    const secret = t.ctx.config.secretKey;
    const subject = { workspaceId: w.ws.id, userId: "amy", subscriptionGroupId: group.id };
    const good = signUnsubscribeToken(secret, subject);
    const [payload, mac] = good.split(".") as [string, string];

    // The signature changed (a character in the middle, so the decoded bytes differ).
    const i = Math.floor(mac.length / 2);
    const flipped = `${payload}.${mac.slice(0, i)}${mac[i] === "A" ? "B" : "A"}${mac.slice(i + 1)}`;
    // Another user's payload under amy's signature.
    const otherPayload = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(payload, "base64url").toString("utf8")), userId: "mal" }),
    ).toString("base64url");
    const swapped = `${otherPayload}.${mac}`;
    // Signed with another secret.
    const otherKey = signUnsubscribeToken("another-secret-key-0123456789abcdef0123456789", subject);
    // Expired a minute ago.
    const expired = signUnsubscribeToken(secret, subject, { now: Date.now() - 60_000, ttlMs: 1000 });

    for (const [label, token] of [
      ["flipped", flipped],
      ["swapped", swapped],
      ["otherKey", otherKey],
      ["expired", expired],
    ] as const) {
      for (const method of ["GET", "POST"]) {
        const res = await request(t.url, method, `${UNSUBSCRIBE_PATH}?token=${encodeURIComponent(token)}`, {
          ...(method === "POST"
            ? { headers: { "content-type": "application/x-www-form-urlencoded" }, raw: "List-Unsubscribe=One-Click" }
            : {}),
        });
        expect(res.status, `${label} ${method}: ${res.text}`).toBe(400);
        expect(html(res), `${label} ${method}`).toMatch(/^text\/html/);
        expect(res.text).toMatch(label === "expired" ? /expired/ : /not valid/);
      }
    }
    const assignments = await w.admin("GET", `/api/admin/subscription-groups/${group.id}/assignments`);
    expect(assignments.items.map((a: { userId: string }) => a.userId)).not.toContain("amy");
    expect(assignments.items.map((a: { userId: string }) => a.userId)).not.toContain("mal");

    // The genuine token still works (the 400s were about the token, not the route).
    const ok = await request(t.url, "GET", `${UNSUBSCRIBE_PATH}?token=${encodeURIComponent(good)}`);
    expect(ok.status, ok.text).toBe(200);
  });

  it("escapes hostile trait values in the HTML body and never evaluates them as Liquid", async () => {
    const row = await deliveryRow(first.id, "mal");
    expect(row.status).toBe("Sent");
    const { html: body, subject, text } = row.rendered as { html: string; subject: string; text: string };
    expect(body).toContain("<p>Hello &lt;script&gt;alert(1)&lt;/script&gt; ({{ 7 | plus: 1 }})</p>");
    expect(body).not.toContain("<script>");
    expect(body).not.toContain("(8)");
    // Text fields are not HTML, so not escaped, but the Liquid-looking value stays literal there too.
    expect(subject).toBe("News for {{ 7 | plus: 1 }}");
    expect(text).toContain("Hello <script>alert(1)</script> ({{ 7 | plus: 1 }})");
  });

  it("accepts the page's own form POST and a one-click POST encoded as multipart/form-data (RFC 8058 allows either)", async () => {
    const secret = t.ctx.config.secretKey;
    const tokenOf = (userId: string) => signUnsubscribeToken(secret, { workspaceId: w.ws.id, userId, subscriptionGroupId: group.id });
    // amy had chosen explicitly to stay subscribed: the link overrides that choice.
    await w.admin("PUT", `/api/admin/subscription-groups/${group.id}/assignments`, { subscribe: ["amy"] });
    const form = new FormData();
    form.set("List-Unsubscribe", "One-Click");
    const multipart = await fetch(`${t.url}${UNSUBSCRIBE_PATH}?token=${encodeURIComponent(tokenOf("amy"))}`, {
      method: "POST",
      body: form,
    });
    expect(multipart.status, await multipart.clone().text()).toBe(200);
    expect(multipart.headers.get("content-type")).toMatch(/^text\/html/);
    // The confirmation page's button: an empty urlencoded body.
    const button = await request(t.url, "POST", `${UNSUBSCRIBE_PATH}?token=${encodeURIComponent(tokenOf("mal"))}`, {
      headers: { "content-type": "application/x-www-form-urlencoded" },
      raw: "",
    });
    expect(button.status, button.text).toBe(200);
    const assignments = await w.admin("GET", `/api/admin/subscription-groups/${group.id}/assignments`);
    const choice = new Map(assignments.items.map((a: { userId: string; subscribed: boolean }) => [a.userId, a.subscribed]));
    expect(choice.get("amy")).toBe(false);
    expect(choice.get("mal")).toBe(false);
  });
});
