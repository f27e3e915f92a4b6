// bench:journeys, phases 2 and 3 (bench/journeys.ts): N runs waiting at a delay, due spread over
// a minute or all at one instant; how late each moved past it, and the CPU per run.
import { delayNode, journeyDef, log, N, secs, segment, until, type World } from "./world.ts";

/** Spread of phase 2's due times. */
export const SPREAD_MS = 60_000;
/** From the load's start to the first due time: the insert must have committed by then. */
const LEAD_MS = 3000 + Math.ceil((7000 * N) / 100_000);

/** The timers journey: entry (an empty hand-set segment) → delay 60 s → exit. */
export async function timersJourney(w: World) {
  const seg = await segment(w, "bench-timers");
  const j = await w.s.admin("PUT", "/api/admin/journeys", {
    name: "bench-timers",
    status: "Running",
    definition: journeyDef(seg, [delayNode(60, "ExitNode")]),
  });
  return { id: j.id as string, version: j.version as number };
}

/** The histogram's cumulative bucket counts (le → count), as /metrics shows them now. */
async function latencyBuckets(w: World): Promise<Map<string, number>> {
  const text = await (await fetch(`${w.s.base}/metrics`)).text();
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^tidings_journey_timer_lateness_seconds_bucket\{le="([^"]+)"\} (\d+)/gm)) out.set(m[1]!, Number(m[2]));
  return out;
}

/**
 * Phases 2 and 3: N runs waiting at the delay, run i due at base + i × stepMs (the due instant is
 * also kept in the run's `event`: the move past the delay clears wait_until); then lateness.
 */
export async function timers(w: World, journey: { id: string; version: number }, prefix: string, stepMs: number) {
  const { s, db } = w;
  const before = await latencyBuckets(w);
  const base = Date.now() + LEAD_MS;
  const loadStart = performance.now();
  let cpuBefore = s.cpu();
  await db.query(
    `INSERT INTO journey_runs (workspace_id, id, journey_id, version, user_id, node_id, waiting, wait_until, due_at, event, entered_at, updated_at)
     SELECT $1, gen_random_uuid(), $2, $3, $4 || i, 'wait', true, d.due, d.due, jsonb_build_object('due', d.due), d.due - interval '60 seconds', now()
     FROM generate_series(0, $5 - 1) i
     CROSS JOIN LATERAL (SELECT date_trunc('milliseconds', to_timestamp($6 / 1000.0) + i * $7::float8 * interval '1 millisecond') AS due) d`,
    [s.workspaceId, journey.id, journey.version, prefix, N, base, stepMs],
  );
  const { rows: c } = await db.query<{ ms: number }>(
    "SELECT extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000 AS ms FROM journey_runs WHERE workspace_id = $1 AND journey_id = $2 AND user_id = $3",
    [s.workspaceId, journey.id, `${prefix}0`],
  );
  const insertCommit = Number(c[0]!.ms);
  log(`${N} runs inserted in ${secs(performance.now() - loadStart)}; committed ${secs(base - insertCommit)} before the first due time`);
  cpuBefore = s.cpu();
  const lastDue = base + (N - 1) * stepMs;
  const active = async () =>
    Number(
      (
        await db.query(
          "SELECT count(*) AS n FROM journey_runs WHERE workspace_id = $1 AND journey_id = $2 AND user_id LIKE $3 AND status = 'Active'",
          [s.workspaceId, journey.id, `${prefix}%`],
        )
      ).rows[0].n,
    );
  // Whether a run of this load still waits: one probe of the active runs' timer index. (Counting
  // them every 250 ms took 147 ms a count at 1 000 000 — a third of the database's time in the
  // phase it measured.)
  const waiting = async () =>
    (
      await db.query(
        `SELECT EXISTS (SELECT 1 FROM journey_runs WHERE workspace_id = $1 AND journey_id = $2 AND status = 'Active'
           AND due_at IS NOT NULL AND user_id LIKE $3) AS waiting`,
        [s.workspaceId, journey.id, `${prefix}%`],
      )
    ).rows[0].waiting as boolean;
  let left = 0;
  try {
    await until(`${prefix} runs still waiting`, waiting, (w) => !w, lastDue - Date.now() + 60_000, 250);
  } catch (err) {
    left = await active();
    log(`${(err as Error).message}: ${left} never moved; figures are for the others`);
  }
  const seenDone = Date.now();
  const cpuAfter = s.cpu();
  const { rows } = await db.query<{ n: number; commit: number[]; commit_max: number; rt: number[]; rt_max: number }>(
    `SELECT count(*)::int AS n,
       percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY c) AS commit, max(c) AS commit_max,
       percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY r) AS rt, max(r) AS rt_max
     FROM (SELECT extract(epoch FROM pg_xact_commit_timestamp(xmin) - (event ->> 'due')::timestamptz) AS c,
             extract(epoch FROM updated_at - (event ->> 'due')::timestamptz) AS r
           FROM journey_runs WHERE workspace_id = $1 AND journey_id = $2 AND user_id LIKE $3 AND status <> 'Active') x`,
    [s.workspaceId, journey.id, `${prefix}%`],
  );
  const after = await latencyBuckets(w);
  const delta = (le: string) => (after.get(le) ?? 0) - (before.get(le) ?? 0);
  const r = rows[0]!;
  return {
    moved: r.n,
    left,
    commit: r.commit.map(Number),
    commitMax: Number(r.commit_max),
    runtime: r.rt.map(Number),
    runtimeMax: Number(r.rt_max),
    insertLate: insertCommit > base,
    /** Share of this phase's timers the histogram saw fire within 1 s. */
    histogramWithin1s: delta("+Inf") > 0 ? delta("1") / delta("+Inf") : Number.NaN,
    histogramCount: delta("+Inf"),
    seenDoneAfterLastDue: seenDone - lastDue,
    /** CPU per run moved, from the load's commit to the last move seen (µs). */
    cpu: {
      server: ((cpuAfter.server - cpuBefore.server) * 1e6) / Math.max(1, r.n),
      postgres: ((cpuAfter.postgres - cpuBefore.postgres) * 1e6) / Math.max(1, r.n),
    },
  };
}
