// A backlog larger than one read (a worker outage under ingestion) is drained in bounded passes,
// under heavy ingestion too, and every change in it is applied.
import { afterAll, beforeAll, expect, it } from "vitest";
import { type DrainTier, SegmentEngine } from "../../src/segments/engine/index.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { holdEngine, identify, segmentWorld, single } from "./support.ts";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

it("drains a backlog in passes of at most the read bound, each user evaluated once per pass", async () => {
  const w = await segmentWorld(t);
  const pro = await w.segment(single({ type: "Trait", path: "plan", operator: { type: "Equals", value: "pro" } } as never));
  await w.settle();
  const passes: Record<DrainTier, [number, number][]> = { profiles: [], events: [] };
  // An engine of its own that reads at most 10 rows a pass and treats every pass as heavy ingestion.
  const engine = new SegmentEngine({
    pool: t.ctx.db.pool,
    jobs: t.ctx.jobs,
    clock: Date.now,
    heavyIngestion: { min: 1, share: 0 },
    outboxRead: { batch: 10, heavy: 10 },
    onDrain: (rows, users, tier) => passes[tier].push([rows, users]),
  });
  // The app's own engine is held off while the backlog builds up (its workspace lock).
  const held = await holdEngine(t.ctx.db.pool, w.ws.id);
  let settled: Promise<void> | undefined;
  try {
    // 30 commits, one event each: 30 outbox rows, 3 users.
    for (let i = 0; i < 30; i++) await w.send([identify(`u${i % 3}`, { plan: i >= 27 ? "pro" : "free", n: i }, Date.now() + i)]);
    const { rows } = await held.client.query("SELECT count(*)::int AS n FROM segment_outbox WHERE workspace_id = $1", [w.ws.id]);
    expect(rows[0].n).toBe(30);
    // Queued behind the held lock, so it drains before the app's engine can try.
    settled = engine.settle(w.ws.id);
  } finally {
    await held.release();
  }
  await settled;
  // Each tier drains the rows in passes of 10: the segment's (it reads no events) evaluating its 3
  // users once a pass, the other with no segment to evaluate.
  expect(passes).toEqual({
    profiles: [
      [10, 3],
      [10, 3],
      [10, 3],
    ],
    events: [
      [10, 0],
      [10, 0],
      [10, 0],
    ],
  });
  expect(await w.members(pro)).toEqual(["u0", "u1", "u2"]);
});
