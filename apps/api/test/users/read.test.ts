// The admin read side of ingestion: GET /api/admin/users/:userId and GET /api/admin/events —
// filters, keyset pagination, query validation and workspace isolation.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp, type TestWorkspace } from "../support/app.ts";
import { basic, bearer, request } from "../support/http.ts";
import { expect204, expectError, getUser, ingest, listEvents } from "../ingest/helpers.ts";

let t: TestApp;
let other: TestWorkspace;
const T0 = Date.UTC(2024, 5, 1);
const user = `reader-${randomUUID()}`;

beforeAll(async () => {
  t = await createTestApp();
  other = await t.newWorkspace();
  // 12 events; pairs share a time so the messageId tie-break is exercised across page borders.
  const batch = Array.from({ length: 12 }, (_, i) => ({
    type: "track",
    userId: user,
    messageId: `m-${String(i).padStart(2, "0")}`,
    event: i % 3 === 0 ? "Signed In" : "Viewed",
    timestamp: new Date(T0 + Math.floor(i / 2) * 1000).toISOString(),
  }));
  expect204(await ingest(t, "batch", { batch }));
  expect204(await ingest(t, "track", { userId: "someone-else", event: "Signed In", timestamp: new Date(T0).toISOString() }));
});
afterAll(async () => {
  await t.close();
});

const get = (path: string, ws: TestWorkspace = t.workspace) => request(t.url, "GET", path, { headers: bearer(ws.adminKey) });

describe("GET /api/admin/events", () => {
  it("lists newest first and pages through every event exactly once", async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await get(`/api/admin/events?userId=${user}&limit=5${cursor ? `&cursor=${cursor}` : ""}`);
      expect(res.status).toBe(200);
      expect(res.body.items.length).toBeLessThanOrEqual(5);
      expect(res.body.events).toEqual(res.body.items);
      seen.push(...res.body.items.map((e: { messageId: string }) => e.messageId));
      cursor = res.body.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    const expected = Array.from({ length: 12 }, (_, i) => `m-${String(11 - i).padStart(2, "0")}`);
    expect(seen).toEqual(expected);
  });

  it("the last page has nextCursor null", async () => {
    const res = await get(`/api/admin/events?userId=${user}&limit=12`);
    expect(res.body.items).toHaveLength(12);
    expect(res.body.nextCursor).toBeNull();
  });

  it("filters by event name and by user", async () => {
    const signedIn = await listEvents(t, { event: "Signed In" });
    expect(signedIn.map((e) => e.userId).sort()).toEqual([user, user, user, user, "someone-else"].sort());
    const both = await listEvents(t, { event: "Signed In", userId: user });
    expect(both.map((e) => e.messageId)).toEqual(["m-09", "m-06", "m-03", "m-00"]);
    expect(await listEvents(t, { userId: "nobody" })).toEqual([]);
    expect(await listEvents(t, { event: "Never Happened" })).toEqual([]);
  });

  it("order=received lists newest received first (an old timestamp sent last is first), pages by receipt, receivedSince bounds it", async () => {
    const w = await t.newWorkspace();
    const send = async (messageId: string, timestamp: number) =>
      expect204(
        await ingest(t, "track", { userId: "importer", event: "E", messageId, timestamp: new Date(timestamp).toISOString() }, w.writeKey),
      );
    await send("recent", Date.now());
    await new Promise((r) => setTimeout(r, 20));
    const between = Date.now();
    await new Promise((r) => setTimeout(r, 20));
    await send("a-year-ago", Date.now() - 365 * 86_400_000);
    const ids = (res: { body: { items: { messageId: string }[] } }) => res.body.items.map((e) => e.messageId);
    expect(ids(await get("/api/admin/events", w))).toEqual(["recent", "a-year-ago"]);
    expect(ids(await get("/api/admin/events?order=received", w))).toEqual(["a-year-ago", "recent"]);
    const first = await get("/api/admin/events?order=received&limit=1", w);
    expect(ids(first)).toEqual(["a-year-ago"]);
    expect(ids(await get(`/api/admin/events?order=received&limit=1&cursor=${first.body.nextCursor}`, w))).toEqual(["recent"]);
    expect(ids(await get(`/api/admin/events?order=received&receivedSince=${between}`, w))).toEqual(["a-year-ago"]);
    expectError(await get("/api/admin/events?order=arrival", w), 400, "VALIDATION_FAILED");
  });

  it("refuses invalid cursors with 400", async () => {
    const cursorOf = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
    // Well-formed but naming positions PostgreSQL cannot compare against (these used to 500).
    const hostile = [cursorOf([1e300, "m"]), cursorOf([-1e20, "m"]), cursorOf([1.5, "m"]), cursorOf([T0, "m\u0000"])];
    for (const cursor of ["garbage!!", "bm90LWpzb24", cursorOf(["x", 1]), cursorOf([1]), ...hostile]) {
      const res = await get(`/api/admin/events?cursor=${encodeURIComponent(cursor)}`);
      expectError(res, 400, "VALIDATION_FAILED");
      expect(res.body.error.issues[0].path).toBe("cursor");
    }
  });

  it("refuses NUL characters in filters with 400 (PostgreSQL text cannot hold them)", async () => {
    for (const [query, path] of [
      ["userId=a%00b", "querystring.userId"],
      ["event=Signed%00In", "querystring.event"],
    ]) {
      const res = await get(`/api/admin/events?${query}`);
      expectError(res, 400, "VALIDATION_FAILED");
      expect(res.body.error.issues[0].path).toBe(path);
    }
  });

  it("enforces limit bounds (1–500, default 50)", async () => {
    for (const limit of ["0", "501", "-1", "abc", "1.5"]) {
      const res = await get(`/api/admin/events?limit=${limit}`);
      expectError(res, 400, "VALIDATION_FAILED");
      expect(res.body.error.issues[0].path).toBe("querystring.limit");
    }
    expect((await get("/api/admin/events?limit=1")).body.items).toHaveLength(1);
    expect((await get("/api/admin/events?limit=500")).status).toBe(200);
    const many = Array.from({ length: 60 }, (_, i) => ({ type: "track", userId: "bulk", event: "E", messageId: `bulk-${i}` }));
    expect204(await ingest(t, "batch", { batch: many }));
    const dflt = await get("/api/admin/events?userId=bulk");
    expect(dflt.body.items).toHaveLength(50);
    expect(dflt.body.nextCursor).not.toBeNull();
  });
});

describe("GET /api/admin/users/:userId", () => {
  it("returns the profile with its latest events (at most 50)", async () => {
    const res = await getUser(t, "bulk");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ userId: "bulk", workspaceId: t.workspace.id, traits: {}, identities: [], groups: [] });
    expect(res.body.recentEvents).toHaveLength(50);
  });

  it("404 with the envelope for an unknown user", async () => {
    const res = await getUser(t, `ghost-${randomUUID()}`);
    expectError(res, 404, "NOT_FOUND");
  });

  it("400 for a userId with a NUL character; ids with URL-special characters work", async () => {
    const res = await get("/api/admin/users/a%00b");
    expectError(res, 400, "VALIDATION_FAILED");
    expect(res.body.error.issues[0].path).toBe("params.userId");
    for (const id of ["a/b", "with space", "ü?#&%"]) {
      expect204(await ingest(t, "identify", { userId: id, traits: { id } }));
      const user = await getUser(t, id);
      expect(user.status).toBe(200);
      expect(user.body).toMatchObject({ userId: id, traits: { id } });
    }
  });

  it("needs an admin key", async () => {
    expectError(await request(t.url, "GET", `/api/admin/users/${user}`), 401, "UNAUTHORIZED");
    expectError(await request(t.url, "GET", `/api/admin/users/${user}`, { headers: bearer(t.workspace.writeKey) }), 401, "UNAUTHORIZED");
  });
});

describe("workspace isolation", () => {
  it("a write key ingests into its own workspace only", async () => {
    const id = `iso-${randomUUID()}`;
    expect204(await ingest(t, "identify", { userId: id, traits: { ws: "other" } }, other.writeKey));
    expect((await getUser(t, id, other)).body.traits).toEqual({ ws: "other" });
    expectError(await getUser(t, id), 404, "NOT_FOUND");
    expect(await listEvents(t, { userId: id })).toEqual([]);
    expect(await listEvents(t, { userId: id }, other)).toHaveLength(1);
  });

  it("another workspace's admin key cannot read this workspace's users or events", async () => {
    expectError(await getUser(t, user, other), 404, "NOT_FOUND");
    expectError(await get(`/api/admin/users/${user}?workspaceId=${t.workspace.id}`, other), 403, "FORBIDDEN");
    expectError(await get(`/api/admin/events?workspaceId=${t.workspace.id}`, other), 403, "FORBIDDEN");
    const own = await get(`/api/admin/events?workspaceId=${other.id}`, other);
    expect(own.status).toBe(200);
    expect(own.body.items.every((e: { userId: string }) => e.userId !== user)).toBe(true);
    expect((await get(`/api/admin/users/${user}?workspaceId=${t.workspace.id}`)).status).toBe(200);
  });

  it("the same messageId in two workspaces is two events", async () => {
    const messageId = `shared-${randomUUID()}`;
    expect204(await ingest(t, "track", { userId: "dup", event: "E", messageId }));
    expect204(await ingest(t, "track", { userId: "dup", event: "E", messageId }, other.writeKey));
    expect((await listEvents(t, { userId: "dup" })).map((e) => e.messageId)).toEqual([messageId]);
    expect((await listEvents(t, { userId: "dup" }, other)).map((e) => e.messageId)).toEqual([messageId]);
  });
});

describe("router-level errors", () => {
  it("reads a 255-character userId and answers bad URL encoding with the envelope", async () => {
    const userId = "u".repeat(255);
    const ingest = await request(t.url, "POST", "/api/public/apps/identify", {
      headers: basic(t.workspace.writeKey),
      body: { userId, traits: { a: 1 } },
    });
    expect(ingest.status).toBe(204);
    const res = await request(t.url, "GET", `/api/admin/users/${userId}`, { headers: bearer(t.workspace.adminKey) });
    expect(res.status).toBe(200);
    expect(res.body.userId).toBe(userId);
    const bad = await request(t.url, "GET", "/api/admin/users/%ED%A0%80", { headers: bearer(t.workspace.adminKey) });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: "VALIDATION_FAILED", requestId: expect.any(String) });
  });
});
