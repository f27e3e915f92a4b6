// /metrics reports the job queue: how many jobs are due and free to take, and how long the
// oldest of them has waited.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRegistry } from "../../src/http/metrics.ts";
import { registerJobGauges } from "../../src/jobs/index.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { scrapeMetrics } from "../support/http.ts";

let t: TestApp;
beforeAll(async () => {
  // The api role runs no job, so the queue holds still.
  t = await createTestApp({ role: "api" });
});
afterAll(async () => {
  await t.close();
});

async function scrape() {
  const value = await scrapeMetrics(t.url);
  return { depth: value("tidings_jobs_queue_depth"), age: value("tidings_jobs_oldest_age_seconds") };
}

describe("job queue gauges", () => {
  it("read 0 for an empty queue", async () => {
    expect(await scrape()).toEqual({ depth: 0, age: 0 });
  });

  it("count due jobs not taken, and the age of the oldest", async () => {
    const jobs = t.ctx.jobs;
    await jobs.add("metrics_probe", { n: 1 }, { runAt: new Date(Date.now() - 30_000) });
    await jobs.add("metrics_probe", { n: 2 });
    await jobs.add("metrics_probe", { n: 3 }, { runAt: new Date(Date.now() + 3600_000) }); // not due
    await jobs.add("metrics_probe", { n: 4 }, { key: "taken" });
    await jobs.add("metrics_probe", { n: 5 }, { key: "failed", maxAttempts: 1 });
    // As a worker would leave them: one taken (locked), one out of attempts.
    await t.ctx.db.pool.query(`UPDATE graphile_worker._private_jobs SET locked_at = now(), locked_by = 'elsewhere' WHERE key = 'taken'`);
    await t.ctx.db.pool.query(`UPDATE graphile_worker._private_jobs SET attempts = 1 WHERE key = 'failed'`);

    const { depth, age } = await scrape();
    expect(depth).toBe(2);
    expect(age).toBeGreaterThanOrEqual(29);
    expect(age).toBeLessThan(120);
  });

  it("read NaN rather than failing the scrape when the queue cannot be read", async () => {
    const registry = createRegistry();
    registerJobGauges(registry, { queueStats: () => Promise.reject(new Error("database down")) });
    const text = await registry.metrics();
    expect(text).toMatch(/^tidings_jobs_queue_depth Nan$/m);
    expect(text).toMatch(/^tidings_jobs_oldest_age_seconds Nan$/m);
  });
});
