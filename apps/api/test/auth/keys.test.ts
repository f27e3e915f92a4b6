// Admin and write keys of a workspace: create, list, revoke, and what a revoked or foreign key
// may still do (nothing). Runs with the key cache on, as production does.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp, type TestWorkspace } from "../support/app.ts";
import { basic, bearer, request } from "../support/http.ts";

let t: TestApp;
let other: TestWorkspace;
beforeAll(async () => {
  t = await createTestApp({ keyCacheSeconds: 60 });
  other = await t.newWorkspace();
});
afterAll(async () => {
  await t.close();
});

const admin = (ws: TestWorkspace = t.workspace) => bearer(ws.adminKey);
const track = (key: string) => request(t.url, "POST", "/v1/track", { headers: basic(key), body: { userId: "k", event: "E" } });
const events = (key: string) => request(t.url, "GET", "/api/admin/events", { headers: bearer(key) });

describe("write keys", () => {
  it("create → usable; list shows a prefix, never the key; revoke → 401 at once despite the cache", async () => {
    const created = await request(t.url, "POST", "/api/admin/write-keys", { headers: admin(), body: { name: "website" } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ workspaceId: t.workspace.id, kind: "Write", name: "website", revokedAt: null, key: expect.stringMatching(/^tdw_/) });
    const key: string = created.body.key;
    expect((await track(key)).status).toBe(204); // now cached

    const list = await request(t.url, "GET", "/api/admin/write-keys", { headers: admin() });
    expect(list.status).toBe(200);
    const listed = list.body.items.find((k: { id: string }) => k.id === created.body.id);
    expect(listed).toMatchObject({ prefix: key.slice(0, 10), revokedAt: null });
    expect(JSON.stringify(list.body)).not.toContain(key);

    expect((await request(t.url, "DELETE", `/api/admin/write-keys/${created.body.id}`, { headers: admin() })).status).toBe(204);
    const res = await track(key);
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe("UNAUTHORIZED");
    const after = await request(t.url, "GET", "/api/admin/write-keys", { headers: admin() });
    expect(after.body.items.find((k: { id: string }) => k.id === created.body.id).revokedAt).toEqual(expect.any(Number));
    // The workspace's other write key is untouched.
    expect((await track(t.workspace.writeKey)).status).toBe(204);
  });

  it("a key of another workspace cannot be revoked or listed from here", async () => {
    const theirs = await request(t.url, "POST", "/api/admin/write-keys", { headers: admin(other), body: {} });
    const del = await request(t.url, "DELETE", `/api/admin/write-keys/${theirs.body.id}`, { headers: admin() });
    expect(del.status).toBe(404);
    expect(del.body.error.code).toBe("NOT_FOUND");
    expect((await track(theirs.body.key)).status).toBe(204);
    const forbidden = await request(t.url, "GET", `/api/admin/write-keys?workspaceId=${other.id}`, { headers: admin() });
    expect(forbidden.status).toBe(403);
    const create = await request(t.url, "POST", "/api/admin/write-keys", { headers: admin(), body: { workspaceId: other.id } });
    expect(create.status).toBe(403);
    expect(create.body.error.code).toBe("FORBIDDEN");
  });

  it("ids that are not UUIDs → 400", async () => {
    const res = await request(t.url, "DELETE", "/api/admin/write-keys/nope", { headers: admin() });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("VALIDATION_FAILED");
  });
});

describe("admin API keys", () => {
  it("a new admin key reads the workspace; once revoked it gets 401 at once", async () => {
    const created = await request(t.url, "POST", "/api/admin/api-keys", { headers: admin(), body: { name: "ci" } });
    expect(created.status).toBe(201);
    expect(created.body.key).toMatch(/^tda_/);
    expect((await events(created.body.key)).status).toBe(200);
    expect((await request(t.url, "DELETE", `/api/admin/api-keys/${created.body.id}`, { headers: admin() })).status).toBe(204);
    const res = await events(created.body.key);
    expect(res.status).toBe(401);
    expect(res.body.error).toMatchObject({ code: "UNAUTHORIZED", requestId: expect.any(String) });
  });

  it("only `Bearer <admin key>` is accepted on admin routes", async () => {
    for (const headers of [{}, basic(t.workspace.adminKey), { authorization: t.workspace.adminKey }, bearer(`tda_${"B".repeat(43)}`), bearer(t.workspace.writeKey)]) {
      const res = await request(t.url, "GET", "/api/admin/events", { headers });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe("UNAUTHORIZED");
    }
  });

  it("a cached key keeps its kind: an admin key cannot ingest, a write key cannot read", async () => {
    // Each key is first used where it belongs, so the key cache holds it.
    expect((await request(t.url, "GET", "/api/admin/events", { headers: bearer(t.workspace.adminKey) })).status).toBe(200);
    expect((await request(t.url, "POST", "/v1/track", { headers: basic(t.workspace.writeKey), body: { userId: "u", event: "e" } })).status).toBe(204);
    const ingest = await request(t.url, "POST", "/v1/track", { headers: basic(t.workspace.adminKey), body: { userId: "u", event: "e" } });
    expect(ingest.status).toBe(401);
    expect(ingest.body.error.code).toBe("UNAUTHORIZED");
    expect((await request(t.url, "GET", "/api/admin/events", { headers: bearer(t.workspace.writeKey) })).status).toBe(401);
  });

  it("a write key cannot mint keys", async () => {
    const res = await request(t.url, "POST", "/api/admin/write-keys", { headers: bearer(t.workspace.writeKey), body: {} });
    expect(res.status).toBe(401);
  });
});
