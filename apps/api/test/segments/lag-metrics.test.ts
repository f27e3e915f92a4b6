// /metrics shows the segment engine's lag: how old the oldest change waiting for it is (read from
// PostgreSQL, so an api process reports workers that stopped draining), and, once drained, how
// long each change waited for its segments to be current.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../support/app.ts";
import { scrapeMetrics } from "../support/http.ts";
import { identify, segmentWorld, single } from "./support.ts";

let t: TestApp;
beforeAll(async () => {
  // The api role runs no job: changes wait until the test drains them.
  t = await createTestApp({ role: "api" });
});
afterAll(async () => {
  await t.close();
});

async function scrape() {
  const value = await scrapeMetrics(t.url);
  return {
    oldest: value("tidings_segment_outbox_oldest_age_seconds"),
    count: value("tidings_segment_engine_lag_seconds_count"),
    sum: value("tidings_segment_engine_lag_seconds_sum"),
  };
}

describe("segment engine lag", () => {
  it("reads 0 with nothing waiting", async () => {
    expect(await scrape()).toEqual({ oldest: 0, count: 0, sum: 0 });
  });

  it("reports the age of a change nobody drains, then how long it waited once drained", async () => {
    const w = await segmentWorld(t);
    await w.segment(single({ type: "Trait", path: "plan", operator: { type: "Equals", value: "pro" } } as never));
    // Created with the segment, before the change to wait for.
    await w.settle();
    await w.send([identify("u1", { plan: "pro" }, Date.now())]);
    await new Promise((resolve) => setTimeout(resolve, 1200));
    const waiting = await scrape();
    expect(waiting.oldest).toBeGreaterThanOrEqual(1.1);
    expect(waiting.oldest).toBeLessThan(30);
    const before = waiting.count;

    await w.settle();
    const drained = await scrape();
    expect(drained.oldest).toBe(0);
    expect(drained.count).toBe(before + 1);
    expect(drained.sum - waiting.sum).toBeGreaterThanOrEqual(1.1);
  });
});
