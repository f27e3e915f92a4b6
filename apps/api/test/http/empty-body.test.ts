// Clients that always send `Content-Type: application/json` send it on DELETE and bodiless POST
// too, with nothing after it: the admin API reads that as no body. Malformed JSON, bodies a
// route needs, and ingestion (which has its own parser) are unaffected.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, ROOT_KEY, type TestApp } from "../support/app.ts";
import { basic, bearer, request } from "../support/http.ts";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

const admin = () => bearer(t.workspace.adminKey);
const json = (contentType = "application/json") => ({ ...admin(), "content-type": contentType });
const newSegment = async () =>
  (await request(t.url, "PUT", "/api/admin/segments", { headers: admin(), body: { name: `s-${crypto.randomUUID()}` } })).body.id as string;

describe("an empty JSON body is no body", () => {
  it("DELETE with Content-Type: application/json and an empty body → 204", async () => {
    const id = await newSegment();
    const res = await request(t.url, "DELETE", `/api/admin/segments/${id}`, { headers: json(), raw: "" });
    expect(res.status, res.text).toBe(204);
    expect((await request(t.url, "GET", `/api/admin/segments/${id}`, { headers: admin() })).status).toBe(404);
  });

  it("also with a charset parameter, and with a body of whitespace only", async () => {
    const id = await newSegment();
    const res = await request(t.url, "DELETE", `/api/admin/segments/${id}`, {
      headers: json("application/json; charset=utf-8"),
      raw: " \r\n",
    });
    expect(res.status, res.text).toBe(204);
  });

  it("a bodiless POST (key creation, every field optional) → 201, with or without the content type", async () => {
    const typed = await request(t.url, "POST", "/api/admin/write-keys", { headers: json(), raw: "" });
    expect(typed.status, typed.text).toBe(201);
    expect(typed.body).toMatchObject({ workspaceId: t.workspace.id, kind: "Write", name: null });
    const bare = await request(t.url, "POST", "/api/admin/api-keys", { headers: admin() });
    expect(bare.status, bare.text).toBe(201);
    const root = await request(t.url, "POST", `/api/admin/workspaces/${t.workspace.id}/api-keys`, {
      headers: { ...bearer(ROOT_KEY), "content-type": "application/json" },
      raw: "",
    });
    expect(root.status, root.text).toBe(201);
  });

  it("a route that needs a body still answers 400 to an empty one", async () => {
    const res = await request(t.url, "PUT", "/api/admin/segments", { headers: json(), raw: "" });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: "VALIDATION_FAILED", issues: [{ path: "(body)" }] });
  });

  it("malformed JSON and prototype poisoning are still refused", async () => {
    const id = await newSegment();
    for (const raw of ["{", "null x", '{"__proto__": {"admin": true}}']) {
      const res = await request(t.url, "DELETE", `/api/admin/segments/${id}`, { headers: json(), raw });
      expect(res.status, raw).toBe(400);
      expect(res.body.error.code).toBe("VALIDATION_FAILED");
    }
    expect((await request(t.url, "GET", `/api/admin/segments/${id}`, { headers: admin() })).status).toBe(200);
  });

  it("ingestion keeps refusing an empty body", async () => {
    const res = await request(t.url, "POST", "/v1/track", {
      headers: { ...basic(t.workspace.writeKey), "content-type": "application/json" },
      raw: "",
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("VALIDATION_FAILED");
  });
});
