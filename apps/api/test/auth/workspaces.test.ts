// Workspaces (root key): create, list, and mint an admin key for any of them.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, ROOT_KEY, type TestApp } from "../support/app.ts";
import { bearer, basic, type Res, request } from "../support/http.ts";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

describe("POST /api/admin/workspaces", () => {
  it("creates a workspace with working keys (root key)", async () => {
    const res = await request(t.url, "POST", "/api/admin/workspaces", { headers: bearer(ROOT_KEY), body: { name: "acme" } });
    expect(res.status).toBe(201);
    expect(res.body.workspace).toMatchObject({ name: "acme", id: expect.any(String), createdAt: expect.any(Number) });
    const { writeKey, adminApiKey } = res.body;
    const ingest = await request(t.url, "POST", "/api/public/apps/track", {
      headers: basic(writeKey),
      body: { userId: "u1", event: "Signed Up" },
    });
    expect(ingest.status).toBe(204);
    const events = await request(t.url, "GET", "/api/admin/events", { headers: bearer(adminApiKey) });
    expect(events.status).toBe(200);
    expect(events.body.items.map((e: { event: string }) => e.event)).toEqual(["Signed Up"]);
  });

  it("refuses a duplicate name with 409", async () => {
    await request(t.url, "POST", "/api/admin/workspaces", { headers: bearer(ROOT_KEY), body: { name: "dup" } });
    const res = await request(t.url, "POST", "/api/admin/workspaces", { headers: bearer(ROOT_KEY), body: { name: "dup" } });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("CONFLICT");
  });

  it("needs the root key: no key, an admin key and a write key get 401", async () => {
    for (const headers of [{}, bearer(t.workspace.adminKey), bearer(t.workspace.writeKey)]) {
      const res = await request(t.url, "POST", "/api/admin/workspaces", { headers, body: { name: "x" } });
      expect(res.status).toBe(401);
      expect(res.body.error).toMatchObject({ code: "UNAUTHORIZED", requestId: expect.any(String) });
    }
  });

  it("validates the body: a blank name, a misspelt field", async () => {
    const res = await request(t.url, "POST", "/api/admin/workspaces", { headers: bearer(ROOT_KEY), body: { name: "" } });
    expect(res.status).toBe(400);
    expect(res.body.error.issues[0].path).toBe("name");
    const blank = await request(t.url, "POST", "/api/admin/workspaces", { headers: bearer(ROOT_KEY), body: { name: "   " } });
    expect(blank.status).toBe(400);
    expect(blank.body.error.issues).toEqual([{ path: "name", message: "must not be empty or only whitespace" }]);
    const typo = await request(t.url, "POST", "/api/admin/workspaces", { headers: bearer(ROOT_KEY), body: { nmae: "acme-2" } });
    expect(typo.status).toBe(400);
    // One issue for one typo: the unknown key, with the missing field it most likely meant.
    expect(typo.body.error.issues).toEqual([{ path: "nmae", message: 'unknown field "nmae" (did you mean "name"?)' }]);
  });
});

describe("GET /api/admin/workspaces (root key)", () => {
  it("lists every workspace by name, cursor-paginated", async () => {
    for (const name of ["list-b", "list-a", "list-c"]) {
      expect((await request(t.url, "POST", "/api/admin/workspaces", { headers: bearer(ROOT_KEY), body: { name } })).status).toBe(201);
    }
    const all = await t.ctx.db.prisma.workspace.findMany({ orderBy: [{ name: "asc" }, { id: "asc" }] });
    const seen: { id: string; name: string; createdAt: number }[] = [];
    let cursor: string | null = null;
    do {
      const res: Res = await request(t.url, "GET", `/api/admin/workspaces?limit=2${cursor ? `&cursor=${cursor}` : ""}`, {
        headers: bearer(ROOT_KEY),
      });
      expect(res.status).toBe(200);
      expect(res.body.items.length).toBeLessThanOrEqual(2);
      expect(res.body.workspaces).toEqual(res.body.items);
      seen.push(...res.body.items);
      cursor = res.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual(all.map((w) => ({ id: w.id, name: w.name, createdAt: w.createdAt.getTime() })));
    expect(seen.map((w) => w.name)).toEqual(expect.arrayContaining(["list-a", "list-b", "list-c"]));
  });

  it("needs the root key; refuses a forged cursor", async () => {
    for (const headers of [{}, bearer(t.workspace.adminKey), bearer(t.workspace.writeKey)]) {
      const res = await request(t.url, "GET", "/api/admin/workspaces", { headers });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe("UNAUTHORIZED");
    }
    const forged = await request(t.url, "GET", "/api/admin/workspaces?cursor=nope", { headers: bearer(ROOT_KEY) });
    expect(forged.status).toBe(400);
    expect(forged.body.error.issues).toEqual([{ path: "cursor", message: expect.any(String) }]);
  });
});

describe("POST /api/admin/workspaces/:id/api-keys (root key)", () => {
  it("mints a working admin key for any workspace, shown once", async () => {
    const ws = await t.newWorkspace();
    const res = await request(t.url, "POST", `/api/admin/workspaces/${ws.id}/api-keys`, {
      headers: bearer(ROOT_KEY),
      body: { name: "rescue" },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      workspaceId: ws.id,
      kind: "Admin",
      name: "rescue",
      revokedAt: null,
      key: expect.stringMatching(/^tda_/),
    });
    const keys = await request(t.url, "GET", "/api/admin/api-keys", { headers: bearer(res.body.key) });
    expect(keys.status).toBe(200);
    expect(keys.body.items.map((k: { id: string }) => k.id)).toContain(res.body.id);
    expect(keys.body.items.every((k: { workspaceId: string }) => k.workspaceId === ws.id)).toBe(true);
    expect(keys.text).not.toContain(res.body.key);
    // With it, the workspace's original admin key can now be revoked.
    const original = keys.body.items.find((k: { id: string }) => k.id !== res.body.id);
    expect((await request(t.url, "DELETE", `/api/admin/api-keys/${original.id}`, { headers: bearer(res.body.key) })).status).toBe(204);
  });

  it("404 for an unknown workspace, 400 for an id that is not a UUID or a misspelt field", async () => {
    const unknown = await request(t.url, "POST", `/api/admin/workspaces/${randomUUID()}/api-keys`, { headers: bearer(ROOT_KEY), body: {} });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe("NOT_FOUND");
    const bad = await request(t.url, "POST", "/api/admin/workspaces/nope/api-keys", { headers: bearer(ROOT_KEY), body: {} });
    expect(bad.status).toBe(400);
    const typo = await request(t.url, "POST", `/api/admin/workspaces/${t.workspace.id}/api-keys`, {
      headers: bearer(ROOT_KEY),
      body: { label: "x" },
    });
    expect(typo.status).toBe(400);
    expect(typo.body.error.issues).toEqual([{ path: "label", message: 'unknown field "label"' }]);
  });

  it("needs the root key: an admin key of that very workspace gets 401", async () => {
    for (const headers of [{}, bearer(t.workspace.adminKey), bearer(t.workspace.writeKey)]) {
      const res = await request(t.url, "POST", `/api/admin/workspaces/${t.workspace.id}/api-keys`, { headers, body: {} });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe("UNAUTHORIZED");
    }
    expect(await t.ctx.db.prisma.apiKey.count({ where: { workspaceId: t.workspace.id, kind: "Admin" } })).toBe(1);
  });
});
