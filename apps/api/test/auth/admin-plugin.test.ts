// The admin plugin guards every /api/admin route by its contract's key kind and resolves the
// workspace once: also for HEAD, also for a workspaceId sent in the query of a request with a body;
// and a route it cannot guard stops the boot.
import { contractsById as op } from "@tidings/schema";
import Fastify from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerAdminAuth } from "../../src/auth/admin-plugin.ts";
import type { KeyStore } from "../../src/auth/keys.ts";
import { route } from "../../src/http/route.ts";
import { createTestApp, ROOT_KEY, type TestApp } from "../support/app.ts";
import { bearer, request } from "../support/http.ts";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

describe("the admin plugin", () => {
  it("guards the HEAD twin of every GET route", async () => {
    expect((await request(t.url, "HEAD", "/api/admin/segments")).status).toBe(401);
    expect((await request(t.url, "HEAD", "/api/admin/segments", { headers: bearer(t.workspace.adminKey) })).status).toBe(200);
    expect((await request(t.url, "HEAD", "/api/admin/workspaces", { headers: bearer(t.workspace.adminKey) })).status).toBe(401);
    expect((await request(t.url, "HEAD", "/api/admin/workspaces", { headers: bearer(ROOT_KEY) })).status).toBe(200);
  });

  it("refuses a workspaceId naming another workspace in the query of a request with a body", async () => {
    const other = await t.newWorkspace();
    const headers = bearer(t.workspace.adminKey);
    const refused = await request(t.url, "PUT", `/api/admin/segments?workspaceId=${other.id}`, { headers, body: { name: "q" } });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe("FORBIDDEN");
    const ok = await request(t.url, "PUT", `/api/admin/segments?workspaceId=${t.workspace.id}`, { headers, body: { name: "q" } });
    expect(ok.status).toBe(200);
    expect(ok.body.workspaceId).toBe(t.workspace.id);
  });

  it("takes the root key on root routes only", async () => {
    expect((await request(t.url, "GET", "/api/admin/workspaces", { headers: bearer(t.workspace.adminKey) })).status).toBe(401);
    expect((await request(t.url, "GET", "/api/admin/segments", { headers: bearer(ROOT_KEY) })).status).toBe(401);
  });
});

describe("routes the admin API cannot guard stop the boot", () => {
  const ctx = { keys: {} as KeyStore, rootKey: "k" };

  it("a route without a contract inside the admin plugin", async () => {
    const app = Fastify();
    const boot = async () => {
      await app.register(async (admin) => {
        registerAdminAuth(admin, ctx);
        admin.get("/api/admin/unguarded", async () => ({}));
      });
      await app.ready();
    };
    await expect(boot()).rejects.toThrow(/registered from a contract/);
  });

  it("an admin contract's route outside it", async () => {
    const app = Fastify();
    expect(() => route(app, op["segments.list"], () => ({ items: [], segments: [], nextCursor: null }))).toThrow(/inside the admin plugin/);
    await app.close();
  });
});
