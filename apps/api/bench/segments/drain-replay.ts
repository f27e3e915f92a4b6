// Phase (f) of bench:segments (../segments.ts), drain cost, replayed: one slice of outbox rows kept
// aside and drained again and again by SegmentEngine.refresh in this process, the server stopped.
import { randomUUID } from "node:crypto";
import pg from "pg";
import type { JobLayer } from "../../src/jobs/index.ts";
import { SegmentEngine } from "../../src/segments/engine/index.ts";
import {
  B_IDENTIFIES,
  type Bench,
  cpuMs,
  createLiveSegments,
  createWorkspace,
  E_TRACKS,
  identifyEvent,
  rand,
  STATEMENTS,
  sendBatch,
  sleep,
  trackEvent,
  untilDrained,
} from "./support.ts";

export const F_USERS = 20_000;
/** 100-event batches: the history before the measured slice, and the slice. */
export const F_HISTORY_BATCHES = 2_000;
export const F_SLICE_BATCHES = 200;
export const F_RUNS = 9;

/** The job layer's surface the engine uses; the replay only calls refresh(). */
const idleJobs: JobLayer = {
  add: async () => {},
  recurring: () => {},
  listen: () => {},
  register: () => {},
  start: async () => {},
  stop: async () => {},
  queueStats: async () => ({ depth: 0, oldestAgeSeconds: 0 }),
  slots: () => 0,
};

export async function drainReplay(bench: Bench) {
  const { admin: db, url, server } = bench;
  const ws = await createWorkspace(bench, `bench-replay-${randomUUID().slice(0, 8)}`);
  await createLiveSegments(bench, ws);
  const run = randomUUID().slice(0, 8);
  let seq = 0;
  const batch = () => [
    ...Array.from({ length: B_IDENTIFIES }, () => identifyEvent(`${run}-${seq++}`, `f-${rand(F_USERS)}`, rand(2) ? "pro" : "free")),
    ...Array.from({ length: E_TRACKS }, () => trackEvent(run, seq++, `f-${rand(F_USERS)}`)),
  ];
  const send = async (batches: number) => {
    let left = batches;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (left-- > 0) await sendBatch(bench, ws, batch());
      }),
    );
    await untilDrained(db, ws.id);
  };
  await send(F_HISTORY_BATCHES);
  // The slice's outbox rows, as ingestion writes them, kept aside to be drained again and again.
  await db.query(`CREATE TABLE bench_outbox AS SELECT * FROM segment_outbox WITH NO DATA;
    CREATE FUNCTION bench_keep() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN INSERT INTO bench_outbox SELECT NEW.*; RETURN NULL; END$$;
    CREATE TRIGGER bench_keep AFTER INSERT ON segment_outbox FOR EACH ROW EXECUTE FUNCTION bench_keep()`);
  await send(F_SLICE_BATCHES);
  await db.query("DROP TRIGGER bench_keep ON segment_outbox; DROP FUNCTION bench_keep()");
  const { rows: kept } = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM bench_outbox");
  // The server's own engine would drain the rows put back: it is stopped (SIGSTOP) meanwhile, at
  // a moment it does not hold the workspace's refresh lock (its tick may be refreshing).
  const lock = `segments:${ws.id}`;
  for (;;) {
    server.kill("SIGSTOP");
    const { rows } = await db.query<{ free: boolean }>("SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS free", [lock]);
    if (rows[0]!.free) {
      await db.query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [lock]);
      break;
    }
    server.kill("SIGCONT");
    await sleep(20);
  }
  // Autovacuum would otherwise start on the loaded tables during the runs, and count in their CPU.
  await db.query("VACUUM (ANALYZE) events, profiles, profile_aliases, segment_memberships, segment_timers, segment_outbox");
  const pool = new pg.Pool({ connectionString: url, max: 3 });
  try {
    let passes = 0;
    let users = 0;
    const engine = new SegmentEngine({
      pool,
      jobs: idleJobs,
      clock: Date.now,
      // The passes of the tier reading events (the other's are short ones over the same rows).
      onDrain: (_, u, tier) => {
        if (tier !== "events") return;
        passes++;
        users += u;
      },
    });
    // BENCH_STATEMENTS: the phase's costliest statements are the replay's.
    if (STATEMENTS) await db.query("SELECT pg_stat_statements_reset()");
    const times: number[] = [];
    const cpu: number[] = [];
    for (let i = 0; i < F_RUNS; i++) {
      await db.query(
        `INSERT INTO segment_outbox (workspace_id, ids, keys, track_ids) SELECT workspace_id, ids, keys, track_ids FROM bench_outbox ORDER BY id`,
      );
      passes = 0;
      users = 0;
      const c = await cpuMs();
      const s = performance.now();
      await engine.refresh(ws.id, true);
      times.push(performance.now() - s);
      cpu.push((await cpuMs()) - c);
    }
    return { rows: kept[0]!.n, times, cpu, passes, users };
  } finally {
    await pool.end();
    server.kill("SIGCONT");
  }
}
