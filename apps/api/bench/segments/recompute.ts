// Phase (a) of bench:segments (../segments.ts), full recompute: the default workspace loaded in SQL,
// then two segments created through the admin API and timed until recomputed, and the same
// definitions run through the engine's code in this process.
import type { SegmentDefinition } from "@tidings/schema";
import type pg from "pg";
import { sql } from "../../src/db/sql.ts";
import { compileSegment, segmentDependencies, segmentInputs } from "../../src/segments/engine/compile.ts";
import { evaluateSegment } from "../../src/segments/engine/evaluate.ts";
import {
  BOUGHT_TWICE_7D,
  type Bench,
  client,
  EVENTS,
  EXPLAIN,
  log,
  putSegment,
  r0,
  secs,
  TRAIT_PRO,
  untilRecomputed,
  USERS,
  type Workspace,
} from "./support.ts";

/** Secondary (non-constraint) indexes of a table, as their CREATE statements. */
async function secondaryIndexes(db: pg.Client, table: string): Promise<{ name: string; def: string }[]> {
  const { rows } = await db.query(
    `SELECT i.indexname AS name, i.indexdef AS def FROM pg_indexes i
     WHERE i.schemaname = 'public' AND i.tablename = $1
       AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)`,
    [table],
  );
  return rows;
}

async function loadRecomputeData(url: string, workspaceId: string, now: Date) {
  const timings: Record<string, number> = {};
  const t = async (label: string, f: () => Promise<unknown>) => {
    const s = performance.now();
    await f();
    timings[label] = performance.now() - s;
    log(`(a) ${label}: ${secs(timings[label])}`);
  };
  const connect = async () => {
    const c = client(url);
    await c.connect();
    await c.query("SET maintenance_work_mem = '512MB'");
    return c;
  };
  const db = await connect();
  const indexes = [...(await secondaryIndexes(db, "events")), ...(await secondaryIndexes(db, "profiles"))];
  await t("drop secondary indexes", () => db.query(indexes.map((i) => `DROP INDEX ${i.name};`).join("\n")));
  const h = (expr: string) => `(hashint4(${expr}) & 2147483647)`;
  const profiles = (c: pg.Client) =>
    c.query(
      `INSERT INTO profiles (workspace_id, profile_id, traits, trait_times, trait_time_max)
       SELECT $1::uuid, 'u' || lpad(n::text, 7, '0'),
         jsonb_build_object('plan', CASE WHEN ${h("n")} % 10 < 2 THEN 'pro' WHEN ${h("n")} % 10 < 3 THEN 'team' ELSE 'free' END,
           'country', (ARRAY['DE','FR','US','GB','ES','IT','NL'])[1 + ${h("n + 1")} % 7], 'score', ${h("n + 2")} % 100,
           'email', 'u' || n || '@example.com', 'lastSeen', to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
         jsonb_build_object('plan', ms, 'country', ms, 'score', ms, 'email', ms, 'lastSeen', ms), ms
       FROM generate_series(1, $2::int) n,
         LATERAL (SELECT date_trunc('milliseconds', $3::timestamptz - (${h("n + 3")}::float8 / 2147483648.0) * interval '30 days') AS ts) t,
         LATERAL (SELECT (extract(epoch FROM t.ts) * 1000)::int8 AS ms) m`,
      [workspaceId, USERS, now],
    );
  const events = (c: pg.Client, from: number, to: number) =>
    c.query(
      `INSERT INTO events (workspace_id, message_id, type, identity_id, user_id, anonymous_id, event, event_time, received_at, payload)
       SELECT $1::uuid, mid, type, uid, uid, NULL, ev, ts, ts,
         CASE WHEN type = 'identify'
           THEN jsonb_build_object('type', type, 'messageId', mid, 'userId', uid,
             'traits', jsonb_build_object('plan', CASE WHEN ${h("n")} % 3 = 0 THEN 'pro' ELSE 'free' END, 'score', ${h("n")} % 100),
             'context', jsonb_build_object('ip', '10.0.0.1', 'library', jsonb_build_object('name', 'bench', 'version', '1')))
           ELSE jsonb_build_object('type', type, 'messageId', mid, 'userId', uid, 'event', ev,
             'properties', CASE WHEN ev = 'Bought' THEN jsonb_build_object('amount', ${h("n + 4")} % 100, 'currency', 'EUR')
               ELSE jsonb_build_object('sku', 'sku-' || (n % 977), 'price', n % 100, 'currency', 'EUR') END,
             'context', jsonb_build_object('ip', '10.0.0.1', 'library', jsonb_build_object('name', 'bench', 'version', '1')))
         END
       FROM generate_series($2::int, $3::int) n,
         LATERAL (SELECT 'r-' || lpad(n::text, 9, '0') AS mid,
           CASE WHEN n % 10 = 0 THEN 'identify' ELSE 'track' END AS type,
           'u' || lpad((1 + ${h("n * 7 + 5")} % $4::int)::text, 7, '0') AS uid,
           CASE WHEN n % 10 = 0 THEN NULL WHEN ${h("n + 1")} % 10 < 3 THEN 'Bought' WHEN ${h("n + 1")} % 10 < 8 THEN 'Item Viewed' ELSE 'Signed Up' END AS ev,
           date_trunc('milliseconds', $5::timestamptz - (($6::int - n)::float8 / $6::int) * interval '30 days'
             - (${h("n + 2")} % 600000) * interval '1 millisecond') AS ts) x`,
      [workspaceId, from, to, USERS, now, EVENTS],
    );
  const sessions = await Promise.all([connect(), connect()]);
  const half = Math.floor(EVENTS / 2);
  await t(`insert ${r0(USERS)} profiles ∥ ${r0(EVENTS)} events (2 sessions)`, () =>
    Promise.all([events(sessions[0]!, 1, half).then(() => profiles(sessions[0]!)), events(sessions[1]!, half + 1, EVENTS)]),
  );
  // Two at a time, each on its own session (the machine's two cores).
  await t(`re-create ${indexes.length} secondary indexes`, async () => {
    const queue = [...indexes];
    await Promise.all(
      sessions.map(async (s) => {
        for (let i = queue.shift(); i; i = queue.shift()) await s.query(i.def);
      }),
    );
  });
  await t("VACUUM ANALYZE events, profiles", () =>
    Promise.all([sessions[0]!.query("VACUUM ANALYZE events"), sessions[1]!.query("VACUUM ANALYZE profiles")]),
  );
  for (const s of sessions) await s.end();
  const restored = [...(await secondaryIndexes(db, "events")), ...(await secondaryIndexes(db, "profiles"))].map((i) => i.def).sort();
  if (JSON.stringify(restored) !== JSON.stringify(indexes.map((i) => i.def).sort()))
    throw new Error("indexes were not restored as they were");
  await db.end();
  return timings;
}

interface RecomputeResult {
  name: string;
  totalMs: number;
  putMs: number;
  pickupMs: number;
  statementMs: number;
  members: number;
  selectMs: number;
  evaluateMs: number;
  inProcessMembers: number;
}

async function recompute(bench: Bench, ws: Workspace, name: string, definition: SegmentDefinition): Promise<RecomputeResult> {
  // The real path: the admin API, then the engine's tick picks the new definition up.
  const t0 = Date.now();
  const created = await putSegment(bench, ws, name, definition);
  const tPut = Date.now();
  const { seen, segment } = await untilRecomputed(bench, ws, created.id);
  const real = {
    totalMs: seen - t0,
    putMs: tPut - t0,
    pickupMs: segment.lastRecomputed! - tPut,
    statementMs: seen - segment.lastRecomputed!,
    members: segment.memberCount,
  };
  log(
    `(a) ${name}: PUT → lastRecomputed seen ${secs(real.totalMs)} (PUT ${real.putMs} ms, tick pick-up ≈ ${real.pickupMs} ms, evaluation ≈ ${real.statementMs} ms), ${r0(real.members)} members`,
  );
  // In process: the compiled query alone, then the whole statement on a throw-away segment row.
  const db = client(bench.url);
  await db.connect();
  const now = new Date();
  const compiled = compileSegment(definition, new Map(), segmentInputs(ws.id, created.id, now, null)).query;
  let s = performance.now();
  const counted = sql`SELECT count(*) FILTER (WHERE member)::int AS members FROM (${compiled}) r`;
  const { rows } = await db.query(counted);
  const selectMs = performance.now() - s;
  await db.query("BEGIN");
  const { rows: seg } = await db.query(
    "INSERT INTO segments (workspace_id, id, name, definition) VALUES ($1, gen_random_uuid(), $2, $3) RETURNING id, definition_updated_at",
    [ws.id, `${name} (in-process, rolled back)`, JSON.stringify(definition)],
  );
  s = performance.now();
  await evaluateSegment(db, { workspaceId: ws.id, id: seg[0].id, definition }, new Map(), now, null, {
    full: { definitionUpdatedAt: seg[0].definition_updated_at, dependsOn: segmentDependencies(definition) },
  });
  const evaluateMs = performance.now() - s;
  await db.query("ROLLBACK");
  log(
    `(a) ${name}: in process: compiled SELECT ${secs(selectMs)} (${r0(rows[0].members)} members), evaluateSegment statement ${secs(evaluateMs)}`,
  );
  if (EXPLAIN || real.totalMs > 10_000) {
    const plan = await db.query(sql`EXPLAIN (ANALYZE, BUFFERS) ${counted}`);
    console.log(`EXPLAIN ANALYZE of ${name}'s compiled query:\n${plan.rows.map((r) => r["QUERY PLAN"]).join("\n")}`);
  }
  await db.end();
  return { name, ...real, selectMs, evaluateMs, inProcessMembers: rows[0].members };
}

/** (a): the load's timings, then each segment's recompute. */
export async function fullRecompute(bench: Bench, ws: Workspace) {
  const load = await loadRecomputeData(bench.url, ws.id, new Date());
  const trait = await recompute(bench, ws, "recompute: plan = pro", TRAIT_PRO);
  const perf = await recompute(bench, ws, "recompute: Bought >= 2 in 7 d, amount >= 10", BOUGHT_TWICE_7D);
  return { load, segments: [trait, perf] };
}
