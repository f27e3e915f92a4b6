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
    expect(created.body).toMatchObject({
      workspaceId: t.workspace.id,
      kind: "Write",
      name: "website",
      revokedAt: null,
      key: expect.stringMatching(/^tdw_/),
    });
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
    for (const headers of [
      {},
      basic(t.workspace.adminKey),
      { authorization: t.workspace.adminKey },
      bearer(`tda_${"B".repeat(43)}`),
      bearer(t.workspace.writeKey),
    ]) {
      const res = await request(t.url, "GET", "/api/admin/events", { headers });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe("UNAUTHORIZED");
    }
  });

  it("a cached key keeps its kind: an admin key cannot ingest, a write key cannot read", async () => {
    // Each key is first used where it belongs, so the key cache holds it.
    expect((await request(t.url, "GET", "/api/admin/events", { headers: bearer(t.workspace.adminKey) })).status).toBe(200);
    expect(
      (await request(t.url, "POST", "/v1/track", { headers: basic(t.workspace.writeKey), body: { userId: "u", event: "e" } })).status,
    ).toBe(204);
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

describe("the last active admin key", () => {
  const adminKeys = (workspaceId: string) =>
    t.ctx.db.prisma.apiKey.findMany({ where: { workspaceId, kind: "Admin" }, orderBy: { createdAt: "asc" } });
  const revoke = (key: string, id: string) => request(t.url, "DELETE", `/api/admin/api-keys/${id}`, { headers: bearer(key) });

  it("cannot be revoked: 409 saying why, and the key keeps working", async () => {
    const ws = await t.newWorkspace();
    const [only] = await adminKeys(ws.id);
    const res = await revoke(ws.adminKey, only!.id);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("CONFLICT");
    expect(res.body.error.message).toMatch(/last active admin API key/);
    expect((await events(ws.adminKey)).status).toBe(200);
    expect((await adminKeys(ws.id))[0]!.revokedAt).toBeNull();
  });

  it("can be revoked once another admin key exists; revoked keys do not count; revoking twice changes nothing", async () => {
    const ws = await t.newWorkspace();
    const [first] = await adminKeys(ws.id);
    const second = await request(t.url, "POST", "/api/admin/api-keys", { headers: bearer(ws.adminKey), body: { name: "second" } });
    expect((await revoke(ws.adminKey, first!.id)).status).toBe(204);
    const revokedAt = (await adminKeys(ws.id))[0]!.revokedAt;
    expect(revokedAt).not.toBeNull();
    // The revoked key no longer counts: the second one is now the last.
    const last = await revoke(second.body.key, second.body.id);
    expect(last.status).toBe(409);
    expect((await revoke(second.body.key, first!.id)).status).toBe(204);
    expect((await adminKeys(ws.id))[0]!.revokedAt).toEqual(revokedAt);
  });

  it("write keys are not protected: the last one can be revoked", async () => {
    const ws = await t.newWorkspace();
    const [write] = await t.ctx.db.prisma.apiKey.findMany({ where: { workspaceId: ws.id, kind: "Write" } });
    const res = await request(t.url, "DELETE", `/api/admin/write-keys/${write!.id}`, { headers: bearer(ws.adminKey) });
    expect(res.status).toBe(204);
  });

  it("holds under concurrency: of two simultaneous revokes of the last two keys, exactly one succeeds", async () => {
    for (let round = 0; round < 8; round++) {
      const ws = await t.newWorkspace();
      const [first] = await adminKeys(ws.id);
      const second = await request(t.url, "POST", "/api/admin/api-keys", { headers: bearer(ws.adminKey), body: {} });
      // Both keys are used once, so both requests pass the key check at once (cached).
      expect((await events(ws.adminKey)).status).toBe(200);
      expect((await events(second.body.key)).status).toBe(200);
      const results = await Promise.all([revoke(ws.adminKey, first!.id), revoke(second.body.key, second.body.id)]);
      expect(results.map((r) => r.status).sort(), `round ${round}`).toEqual([204, 409]);
      const active = (await adminKeys(ws.id)).filter((k) => k.revokedAt === null);
      expect(active).toHaveLength(1);
    }
  });

  it("a workspaceId naming another workspace is a 403 on revoke too", async () => {
    const [mine] = await adminKeys(t.workspace.id);
    const res = await request(t.url, "DELETE", `/api/admin/api-keys/${mine!.id}?workspaceId=${other.id}`, { headers: admin() });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe("FORBIDDEN");
  });
});
