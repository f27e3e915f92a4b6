// /metrics: request counts and latency per route template, method and status; event-loop gauges.
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
    expect(
      (await request(t.url, "GET", `/api/admin/users/${encodeURIComponent("a")}`, { headers: { authorization: `Bearer ${ws.adminKey}` } }))
        .status,
    ).toBe(200);
    const text = (await request(t.url, "GET", "/metrics")).text;
    expect(text).toContain('tidings_http_requests_total{route="/v1/track",method="POST",status="204"} 2');
    expect(text).toContain('tidings_http_requests_total{route="/v1/track",method="POST",status="401"} 1');
    expect(text).toContain('tidings_http_requests_total{route="/api/admin/users/:userId",method="GET",status="200"} 1');
    expect(text).toContain('tidings_http_request_duration_seconds_count{route="/v1/track",method="POST"} 3');
    expect(text).toMatch(/tidings_http_request_duration_seconds_bucket\{le="2\.5",route="\/v1\/track",method="POST"\} 3/);
  });

  it("reports a number for every sample, also when scraped again at once", async () => {
    const check = (text: string) => {
      const samples = text.split("\n").filter((line) => line !== "" && !line.startsWith("#"));
      expect(samples.length).toBeGreaterThan(20);
      // prom-client writes NaN as "Nan"; Prometheus reads either spelling.
      expect(samples.filter((line) => /\snan$/i.test(line))).toEqual([]);
      // An empty event-loop delay histogram also reports a minimum of 2^63 ns (292 years).
      const delays = samples.filter((line) => line.startsWith("nodejs_eventloop_lag_"));
      expect(delays).toHaveLength(8);
      for (const line of delays) expect(Number(line.split(" ")[1]), line).toBeLessThan(60);
    };
    check((await request(t.url, "GET", "/metrics")).text);
    check((await request(t.url, "GET", "/metrics")).text);
    // Two scrapes within one turn of the event loop: the delay histogram (sampled every 10 ms)
    // gets no sample in between, as happens when scrapes follow each other quickly.
    await t.ctx.registry.metrics();
    check(await t.ctx.registry.metrics());
  });

  it("reports an event-loop stall in the scrape that follows it", async () => {
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    await t.ctx.registry.metrics(); // a scrape starts a new window
    await sleep(30); // after a reset, the histogram's first tick only sets its reference time
    const until = Date.now() + 200;
    while (Date.now() < until); // the server runs in this process: stall its event loop
    await sleep(30); // the next tick records the stall
    const text = (await request(t.url, "GET", "/metrics")).text;
    expect(Number(text.match(/^nodejs_eventloop_lag_max_seconds (\S+)$/m)?.[1])).toBeGreaterThan(0.15);
  });
});
