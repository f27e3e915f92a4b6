// Hand-set members of manual segments and the segment users listing.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../support/app.ts";
import { basic, bearer, request } from "../support/http.ts";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

const admin = () => bearer(t.workspace.adminKey);
const putSegment = async (body: Record<string, unknown>) => {
  const res = await request(t.url, "PUT", "/api/admin/segments", { headers: admin(), body: { workspaceId: t.workspace.id, ...body } });
  expect(res.status).toBe(200);
  return res.body as { id: string };
};
const members = (id: string, body: Record<string, unknown>) =>
  request(t.url, "PUT", `/api/admin/segments/${id}/members`, { headers: admin(), body });
/** The listing after the segment engine has applied every change (it keeps membership within about a second). */
const users = async (id: string, qs = "") => {
  await t.ctx.segments.settle(t.workspace.id);
  const res = await request(t.url, "GET", `/api/admin/segments/${id}/users${qs}`, { headers: admin() });
  expect(res.status).toBe(200);
  expect(res.body.users).toEqual(res.body.items);
  return res.body as { items: { userId: string; enteredAt: number }[]; nextCursor: string | null };
};
const userIds = async (id: string) => (await users(id, "?limit=500")).items.map((u) => u.userId);

describe("PUT /api/admin/segments/:id/members", () => {
  it("adds and removes members of a manual segment, answering with counts", async () => {
    const seg = await putSegment({ name: "Beta testers" });
    const before = Date.now();
    const first = await members(seg.id, { add: ["u1", "u2", "u2"] });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ added: 2, removed: 0, total: 2 });
    const again = await members(seg.id, { add: ["u1"] });
    expect(again.body).toEqual({ added: 0, removed: 0, total: 2 });
    const swap = await members(seg.id, { add: ["u3"], remove: ["u2", "never-a-member"] });
    expect(swap.body).toEqual({ added: 1, removed: 1, total: 2 });
    const listed = await users(seg.id);
    expect(listed.items.map((u) => u.userId)).toEqual(["u1", "u3"]);
    for (const u of listed.items) expect(u.enteredAt).toBeGreaterThanOrEqual(before - 1000);
    expect(listed.nextCursor).toBeNull();
  });

  it("resolves linked identities: an anonymousId adds the user it belongs to", async () => {
    const ingest = await request(t.url, "POST", "/api/public/apps/identify", {
      headers: basic(t.workspace.writeKey),
      body: { userId: "alice", anonymousId: "anon-alice", traits: { email: "alice@example.com" } },
    });
    expect(ingest.status).toBe(204);
    const seg = await putSegment({ name: "Linked members" });
    const res = await members(seg.id, { add: ["anon-alice"] });
    expect(res.body).toEqual({ added: 1, removed: 0, total: 1 });
    expect(await userIds(seg.id)).toEqual(["alice"]);
    // Adding the user under either id is the same member; removing by the other id removes it.
    expect((await members(seg.id, { add: ["alice"] })).body.added).toBe(0);
    expect((await members(seg.id, { remove: ["anon-alice"] })).body).toEqual({ added: 0, removed: 1, total: 0 });
  });

  it("refuses a user in both add and remove with 400 naming the item", async () => {
    const seg = await putSegment({ name: "Both lists" });
    const res = await members(seg.id, { add: ["a", "b"], remove: ["c", "b"] });
    expect(res.status).toBe(400);
    expect(res.body.error.issues.map((i: { path: string }) => i.path)).toEqual(["remove.1"]);
    expect(await userIds(seg.id)).toEqual([]);
  });

  it("validates the lists", async () => {
    const seg = await putSegment({ name: "Bad lists" });
    const res = await members(seg.id, { add: ["ok", ""], remove: "nope" });
    expect(res.status).toBe(400);
    expect(res.body.error.issues.map((i: { path: string }) => i.path).sort()).toEqual(["add.1", "remove"]);
  });

  it("refuses members on a computed segment with 409, and lists no users for it", async () => {
    const seg = await putSegment({
      name: "Computed",
      definition: { entryNode: { type: "Trait", id: "t", path: "plan", operator: { type: "Exists" } } },
    });
    const res = await members(seg.id, { add: ["u1"] });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("CONFLICT");
    expect(res.body.error.message).toMatch(/Manual node/);
    expect(await userIds(seg.id)).toEqual([]);
  });

  it("accepts members when a Manual node is one condition among others", async () => {
    const seg = await putSegment({
      name: "Manual or trait",
      definition: {
        entryNode: { type: "Or", id: "root", children: ["m", "t"] },
        nodes: [
          { type: "Manual", id: "m" },
          { type: "Trait", id: "t", path: "vip", operator: { type: "Equals", value: true } },
        ],
      },
    });
    expect((await members(seg.id, { add: ["u9"] })).body).toEqual({ added: 1, removed: 0, total: 1 });
    expect(await userIds(seg.id)).toEqual(["u9"]);
  });

  it("keeps hand-set members across a definition without a Manual node and back", async () => {
    const seg = await putSegment({ name: "Switcher" });
    await members(seg.id, { add: ["k1", "k2"] });
    await putSegment({
      id: seg.id,
      name: "Switcher",
      definition: { entryNode: { type: "Trait", id: "e", path: "never", operator: { type: "Exists" } } },
    });
    expect(await userIds(seg.id)).toEqual([]);
    expect((await members(seg.id, { add: ["k3"] })).status).toBe(409);
    await putSegment({ id: seg.id, name: "Switcher", definition: { entryNode: { type: "Manual", id: "m" } } });
    expect(await userIds(seg.id)).toEqual(["k1", "k2"]);
  });

  it("answers 404 for an unknown segment", async () => {
    const res = await members(randomUUID(), { add: ["u1"] });
    expect(res.status).toBe(404);
    const list = await request(t.url, "GET", `/api/admin/segments/${randomUUID()}/users`, { headers: admin() });
    expect(list.status).toBe(404);
  });
});

describe("GET /api/admin/segments/:id/users", () => {
  it("pages through members in user id order", async () => {
    const seg = await putSegment({ name: "Paged members" });
    const ids = ["m5", "m1", "m4", "m2", "m3"];
    await members(seg.id, { add: ids });
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await users(seg.id, `?limit=2${cursor ? `&cursor=${cursor}` : ""}`);
      expect(page.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.items.map((u) => u.userId));
      cursor = page.nextCursor;
      pages++;
    } while (cursor && pages < 10);
    expect(pages).toBe(3);
    expect(seen).toEqual([...ids].sort());
  });

  it("searches members by part of their user id, case-insensitively, page by page, in its own workspace only", async () => {
    const ids = ["Ann-1", "bob", "joANNa", "ann_2", "annex%", "zed", "back\\slash"];
    const seg = await putSegment({ name: "Searched members" });
    await members(seg.id, { add: ids });
    // Another workspace with the same segment name and user ids.
    const other = await t.newWorkspace();
    const theirs = await request(t.url, "PUT", "/api/admin/segments", {
      headers: bearer(other.adminKey),
      body: { name: "Searched members" },
    });
    await request(t.url, "PUT", `/api/admin/segments/${theirs.body.id}/members`, {
      headers: bearer(other.adminKey),
      body: { add: ["Ann-3"] },
    });

    const found = async (search: string, limit = 10) => {
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page = await users(seg.id, `?search=${encodeURIComponent(search)}&limit=${limit}${cursor ? `&cursor=${cursor}` : ""}`);
        seen.push(...page.items.map((u) => u.userId));
        cursor = page.nextCursor;
      } while (cursor);
      return seen;
    };
    expect(await found("ann")).toEqual(["Ann-1", "ann_2", "annex%", "joANNa"]);
    expect(await found("ann", 1)).toEqual(["Ann-1", "ann_2", "annex%", "joANNa"]);
    // LIKE's wildcards are plain text here.
    expect(await found("_")).toEqual(["ann_2"]);
    expect(await found("%")).toEqual(["annex%"]);
    expect(await found("\\")).toEqual(["back\\slash"]);
    expect(await found("nobody")).toEqual([]);
    const empty = await request(t.url, "GET", `/api/admin/segments/${seg.id}/users?search=`, { headers: admin() });
    expect(empty.status).toBe(400);
  });
});
