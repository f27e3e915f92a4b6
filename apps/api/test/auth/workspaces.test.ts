import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, ROOT_KEY, type TestApp } from "../support/app.ts";
import { bearer, basic, request } from "../support/http.ts";

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

  it("validates the body", async () => {
    const res = await request(t.url, "POST", "/api/admin/workspaces", { headers: bearer(ROOT_KEY), body: { name: "" } });
    expect(res.status).toBe(400);
    expect(res.body.error.issues[0].path).toBe("name");
  });
});
