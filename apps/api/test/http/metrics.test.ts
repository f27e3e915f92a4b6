// /metrics: request counts and latency per route template, method and status.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../support/app.ts";
import { request } from "../support/http.ts";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

describe("/metrics", () => {
  it("counts requests and observes latency by route template, method and status", async () => {
    const ws = t.workspace;
    const auth = { authorization: `Basic ${ws.writeKey}` };
    for (const userId of ["a", "b"]) {
      expect((await request(t.url, "POST", "/v1/track", { headers: auth, body: { userId, event: "Seen" } })).status).toBe(204);
    }
    expect((await request(t.url, "POST", "/v1/track", { body: { userId: "c", event: "Seen" } })).status).toBe(401);
    expect((await request(t.url, "GET", `/api/admin/users/${encodeURIComponent("a")}`, { headers: { authorization: `Bearer ${ws.adminKey}` } })).status).toBe(200);
    const text = (await request(t.url, "GET", "/metrics")).text;
    expect(text).toContain('tidings_http_requests_total{route="/v1/track",method="POST",status="204"} 2');
    expect(text).toContain('tidings_http_requests_total{route="/v1/track",method="POST",status="401"} 1');
    expect(text).toContain('tidings_http_requests_total{route="/api/admin/users/:userId",method="GET",status="200"} 1');
    expect(text).toContain('tidings_http_request_duration_seconds_count{route="/v1/track",method="POST"} 3');
    expect(text).toMatch(/tidings_http_request_duration_seconds_bucket\{le="2\.5",route="\/v1\/track",method="POST"\} 3/);
  });
});
