// Every public endpoint under both prefixes, with every write-key form PRODUCT §3 accepts, and
// the credentials it must refuse.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../support/app.ts";
import { basic, bearer, request } from "../support/http.ts";
import { expect204, expectAlive, expectError, KINDS, listEvents, minimalEvent, PREFIXES } from "./helpers.ts";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

const b64 = (s: string) => Buffer.from(s).toString("base64");

/** How a client may present the write key: headers, and whether the body carries `writeKey`. */
const KEY_FORMS: { name: string; headers: (key: string) => Record<string, string>; inBody?: boolean }[] = [
  { name: "Basic <key>", headers: (k) => ({ authorization: `Basic ${k}` }) },
  { name: "Basic base64(<key>:)", headers: (k) => ({ authorization: `Basic ${b64(`${k}:`)}` }) },
  { name: "Basic base64(<key>)", headers: (k) => ({ authorization: `Basic ${b64(k)}` }) },
  { name: "Bearer <key>", headers: (k) => ({ authorization: `Bearer ${k}` }) },
  { name: "bare key in Authorization", headers: (k) => ({ authorization: k }) },
  { name: "PublicWriteKey", headers: (k) => ({ PublicWriteKey: k }) },
  {
    name: "PublicWriteKey + Authorization naming the same key",
    headers: (k) => ({ PublicWriteKey: k, authorization: `Basic ${b64(`${k}:`)}` }),
  },
  { name: "writeKey body field", headers: () => ({}), inBody: true },
];

const ENDPOINTS = PREFIXES.flatMap((prefix) => [...KINDS, "batch" as const].map((kind) => ({ prefix, kind, path: `${prefix}/${kind}` })));

function bodyFor(kind: (typeof KINDS)[number] | "batch", userId: string) {
  if (kind === "batch") {
    const ev = { type: "track", ...minimalEvent("track", userId) };
    return { batch: [ev], messageIds: [ev.messageId] };
  }
  const ev = minimalEvent(kind, userId);
  return { ...ev, messageIds: [ev.messageId as string] };
}

describe("write-key forms × endpoints", () => {
  it.each(KEY_FORMS)("$name is accepted by all 14 endpoints and the events are stored", async (form) => {
    const userId = `u-${form.name.replace(/\W+/g, "-")}`;
    const sent: string[] = [];
    for (const { path, kind } of ENDPOINTS) {
      const { messageIds, ...body } = bodyFor(kind, userId);
      const res = await request(t.url, "POST", path, {
        headers: form.headers(t.workspace.writeKey),
        body: form.inBody ? { ...body, writeKey: t.workspace.writeKey } : body,
      });
      expect(res.status, `${path}: ${res.text}`).toBe(204);
      expect(res.text).toBe("");
      sent.push(...messageIds);
    }
    const stored = (await listEvents(t)).filter((e) => sent.includes(e.messageId));
    expect(stored.map((e) => e.messageId).sort()).toEqual([...sent].sort());
    // The key is a credential: it must not end up in stored payloads.
    for (const e of stored) expect(JSON.stringify(e.payload)).not.toContain(t.workspace.writeKey);
    const types = new Set(stored.map((e) => e.type));
    expect([...types].sort()).toEqual([...KINDS].sort());
  });
});

describe("refused credentials", () => {
  let revokedKey: string;
  let otherKey: string;
  beforeAll(async () => {
    const created = await request(t.url, "POST", "/api/admin/write-keys", {
      headers: bearer(t.workspace.adminKey),
      body: { name: "to revoke" },
    });
    expect(created.status).toBe(201);
    revokedKey = created.body.key;
    expect204(await request(t.url, "POST", "/v1/track", { headers: basic(revokedKey), body: minimalEvent("track") }));
    const del = await request(t.url, "DELETE", `/api/admin/write-keys/${created.body.id}`, { headers: bearer(t.workspace.adminKey) });
    expect(del.status).toBe(204);
    const other = await request(t.url, "POST", "/api/admin/write-keys", { headers: bearer(t.workspace.adminKey), body: {} });
    otherKey = other.body.key;
  });

  const unknownKey = `tdw_${"A".repeat(43)}`;
  const cases: { name: string; headers: () => Record<string, string>; bodyKey?: () => string }[] = [
    { name: "no key", headers: () => ({}) },
    { name: "unknown key (Basic)", headers: () => basic(unknownKey) },
    { name: "unknown key (PublicWriteKey)", headers: () => ({ PublicWriteKey: unknownKey }) },
    { name: "unknown key (body writeKey)", headers: () => ({}), bodyKey: () => unknownKey },
    { name: "garbage key", headers: () => basic("not-a-key") },
    { name: "unrecognised scheme", headers: () => ({ authorization: `Digest username="${t.workspace.writeKey}"` }) },
    { name: "revoked key", headers: () => ({ authorization: `Basic ${b64(`${revokedKey}:`)}` }) },
    { name: "admin key as Basic", headers: () => basic(t.workspace.adminKey) },
    { name: "admin key as Bearer", headers: () => bearer(t.workspace.adminKey) },
    { name: "admin key in body", headers: () => ({}), bodyKey: () => t.workspace.adminKey },
    {
      name: "PublicWriteKey and Authorization naming different (valid) keys",
      headers: () => ({ PublicWriteKey: otherKey, authorization: `Basic ${t.workspace.writeKey}` }),
    },
  ];

  it.each(cases)("$name → 401 on every endpoint, nothing stored", async (c) => {
    const before = (await listEvents(t)).length;
    for (const { path, kind } of ENDPOINTS) {
      const { messageIds: _ids, ...body } = bodyFor(kind, "u-refused");
      const res = await request(t.url, "POST", path, { headers: c.headers(), body: c.bodyKey ? { ...body, writeKey: c.bodyKey() } : body });
      expectError(res, 401, "UNAUTHORIZED");
    }
    expect((await listEvents(t)).length).toBe(before);
    await expectAlive(t);
  });

  it("a write key cannot read the admin API", async () => {
    const res = await request(t.url, "GET", "/api/admin/events", { headers: bearer(t.workspace.writeKey) });
    expectError(res, 401, "UNAUTHORIZED");
  });
});

describe("a write key inside a batch item", () => {
  it("is not stored with the event", async () => {
    const res = await request(t.url, "POST", "/v1/batch", {
      headers: basic(t.workspace.writeKey),
      body: { batch: [{ type: "track", userId: "wk-item", event: "E", messageId: "wk-item-1", writeKey: t.workspace.writeKey }] },
    });
    expect(res.status).toBe(204);
    const events = await request(t.url, "GET", "/api/admin/events?userId=wk-item", { headers: bearer(t.workspace.adminKey) });
    expect(events.body.items).toHaveLength(1);
    expect(JSON.stringify(events.body.items[0].payload)).not.toContain(t.workspace.writeKey);
  });
});

describe("Segment's OAuth mode", () => {
  it("takes the body's writeKey when the Bearer token is not a Tidings key", async () => {
    const ok = await request(t.url, "POST", "/v1/track", {
      headers: { authorization: "Bearer eyJhbGciOiJSUzI1NiJ9.oauth-access-token" },
      body: { userId: "oauth-user", event: "E", writeKey: t.workspace.writeKey },
    });
    expect(ok.status).toBe(204);
    const noBodyKey = await request(t.url, "POST", "/v1/track", {
      headers: { authorization: "Bearer eyJhbGciOiJSUzI1NiJ9.oauth-access-token" },
      body: { userId: "oauth-user", event: "E" },
    });
    expect(noBodyKey.status).toBe(401);
  });
});
