// pnpm bench:journeys — the journey runtime (docs/journeys.md) on one embedded, durable PostgreSQL
// (track_commit_timestamp on, so the instant each run's move became visible can be read back),
// with the server as its own process (node dist/main.js) and the webhook receiver in this one,
// like bench:broadcast. N = BENCH_JOURNEY_USERS (default 100 000).
//  1. Entry at once. N profiles (set-based SQL) are members of a Trait segment (computed by the
//     engine before the clock starts). The journey entry → message → delay → segment split
//     (plan = pro) → message (one node per branch) is then started with one PUT, status Running:
//     that commit is the entering one (it records the runtime's entry job, which inserts the runs
//     after it). Figures: that commit (pg_xact_commit_timestamp) → the first message at the
//     receiver; messages/s of the first message node (N ÷ first → last request) and, after the
//     delay (BENCH_JOURNEY_DELAY_S, default 60), of the second (also bounded by how fast the
//     delays fall due, i.e. how the first node went), each over the messages/s of the bare undici
//     loop (bench/support.ts) to the same receiver. BENCH_JOURNEY_ROUNDS (default 3) interleaved
//     rounds, each a new journey for the same members, the bare loop before or after it
//     alternating; the figures are the median rounds' ratios (target ≥ 0.8 each; ≥ 0.75 with
//     BENCH_POLICIES=1, delivery policies configured but never binding, bench/support.ts). Each
//     round also prints the CPU per message (the whole journey: entry, moves, both nodes) of the
//     server and of PostgreSQL, from /proc. BENCH_JOURNEY_ROUNDS=0 skips this phase.
//  2. Spread timers. N runs of another journey (entry → delay → exit) are inserted set-based
//     (SQL), waiting at the delay, due at instants spread over 60 s starting a few seconds after
//     the insert commits. Lateness of each = commit of the move past the delay − due; also the
//     runtime's own figure (its clock when it took the batch − due, what the histogram
//     tidings_journey_timer_lateness_seconds observes). p50/p95/p99/max; target p99 ≤ 1 s.
//  3. Same instant. N such runs all due at one instant: due → the last one past the delay
//     (its commit). Target ≤ 10 s. Phases 2 and 3 also print the CPU per run moved.
//  4. Entry latency. Track events naming an EventEntryNode journey's event, one request each at a
//     steady 200/s for 10 s: the event's commit → its run's start. Target p95 ≤ 1 s.
// Receiver, server and PostgreSQL share the machine's cores, and other work on the machine skews
// every figure: the summary shows the 1-minute load average around each phase.
import os from "node:os";
import type { JourneyBodyNode, JourneyDefinition, JourneyStats } from "@tidings/schema";
import pg from "pg";
import {
  bareLoop,
  type BenchServer,
  median,
  type PathCount,
  policiesFromEnv,
  SIGNING_SECRET,
  startBenchServer,
  startReceiver,
  summaryLine,
} from "./support.ts";

const N = Number(process.env.BENCH_JOURNEY_USERS ?? 100_000);
/** Interleaved rounds of phase 1 and the bare loop (the median ratios are the figures). */
const ROUNDS = Number(process.env.BENCH_JOURNEY_ROUNDS ?? 3);
const DELAY_S = Number(process.env.BENCH_JOURNEY_DELAY_S ?? 60);
/** Phase 4: track events per second, and for how long. */
const ENTRY_RATE = 200;
const ENTRY_SECONDS = 10;
/** Spread of phase 2's due times. */
const SPREAD_MS = 60_000;
/** From the load's start to the first due time: the insert must have committed by then. */
const LEAD_MS = 3000 + Math.ceil((7000 * N) / 100_000);
/** The body the bare loop sends too (bench/support.ts), so both send the same bytes. */
const BODY = '{"user":"{{ user.id }}","plan":"{{ user.plan }}"}';

const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (s: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${s}`);
/** A PostgreSQL instant (ms since epoch) on this process's performance.now() scale. */
const perfOf = (epochMs: number) => epochMs - performance.timeOrigin;

async function until<T>(what: string, read: () => Promise<T> | T, done: (v: T) => boolean, timeoutMs: number, everyMs = 100): Promise<T> {
  const end = performance.now() + timeoutMs;
  let said = performance.now();
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (performance.now() > end) throw new Error(`${what}: not done after ${secs(timeoutMs)} (last: ${JSON.stringify(v)})`);
    if (performance.now() - said > 10_000) {
      log(`  … ${what}: ${JSON.stringify(v)}`);
      said = performance.now();
    }
    await sleep(everyMs);
  }
}

/** Requests on several paths taken together. */
function merged(counts: PathCount[]): PathCount {
  const seen = counts.filter((c) => c.count > 0);
  return {
    count: seen.reduce((a, c) => a + c.count, 0),
    first: Math.min(...seen.map((c) => c.first)),
    last: Math.max(...seen.map((c) => c.last)),
  };
}

const trait = (path: string, value: string) => ({
  entryNode: { type: "Trait", id: "t", path, operator: { type: "Equals", value } },
  nodes: [],
});
const messageNode = (id: string, templateId: string, child: string): JourneyBodyNode => ({
  id,
  type: "MessageNode",
  channel: "Webhook",
  templateId,
  child,
});
const delayNode = (seconds: number, child: string): JourneyBodyNode => ({
  id: "wait",
  type: "DelayNode",
  variant: { type: "Second", seconds },
  child,
});
const journeyDef = (segment: string, nodes: JourneyBodyNode[]): JourneyDefinition => ({
  entryNode: { type: "EntryNode", segment, child: nodes[0]!.id },
  nodes,
  exitNode: { type: "ExitNode", id: "ExitNode" },
});

type Receiver = ReturnType<typeof startReceiver>;

interface World {
  s: BenchServer;
  db: pg.Client;
  receiver: Receiver;
  receiverUrl: string;
}

async function segment(w: World, name: string, definition?: unknown, members?: number): Promise<string> {
  const { id } = await w.s.admin("PUT", "/api/admin/segments", { name, ...(definition ? { definition } : {}) });
  if (members !== undefined) {
    await until(
      `segment ${name} computed`,
      async () =>
        Number(
          (
            await w.db.query("SELECT count(*) AS n FROM segment_memberships WHERE workspace_id = $1 AND segment_id = $2", [
              w.s.workspaceId,
              id,
            ])
          ).rows[0].n,
        ),
      (n) => n === members,
      120_000,
      200,
    );
  }
  return id;
}

async function template(w: World, name: string, hook: string): Promise<string> {
  const definition = { type: "Webhook", url: `${w.receiverUrl}${hook}`, method: "POST", body: BODY };
  return (await w.s.admin("PUT", "/api/admin/content/templates", { name, definition })).id;
}

/** Phase 1's members and segments (computed before any clock starts), and a warm-up journey. */
async function prepareEntry(w: World) {
  const { s, db, receiver } = w;
  let t = performance.now();
  await db.query(
    `INSERT INTO profiles (workspace_id, profile_id, traits)
     SELECT $1, 'member-' || i, jsonb_build_object('plan', CASE WHEN i % 2 = 0 THEN 'pro' ELSE 'std' END,
       'email', 'member-' || i || '@example.test', 'cohort', 'bench')
     FROM generate_series(0, $2 - 1) i`,
    [s.workspaceId, N],
  );
  await db.query("ANALYZE profiles");
  log(`profiles loaded: ${N} in ${secs(performance.now() - t)}`);
  t = performance.now();
  const entry = await segment(w, "bench-entry", trait("cohort", "bench"), N);
  const pro = await segment(w, "bench-pro", trait("plan", "pro"), Math.ceil(N / 2));
  log(`segments computed in ${secs(performance.now() - t)}`);

  // Warm-up: a one-member journey through the same path (entry job, advance, sends).
  const warm = await segment(w, "bench-warm", trait("email", "member-1@example.test"), 1);
  await s.admin("PUT", "/api/admin/journeys", {
    name: "bench-warm-up",
    status: "Running",
    definition: journeyDef(warm, [messageNode("hello", await template(w, "warm", "/warm"), "ExitNode")]),
  });
  await until(
    "warm-up message",
    () => receiver.path("/warm").count,
    (n) => n >= 1,
    30_000,
  );
  const templates = {
    first: await template(w, "first", "/first"),
    secondPro: await template(w, "second-pro", "/second-pro"),
    secondStd: await template(w, "second-std", "/second-std"),
  };
  return { entry, pro, templates };
}

/** Phase 1, one round: every member enters a new journey with one commit. */
async function entryAtOnce(w: World, prepared: Awaited<ReturnType<typeof prepareEntry>>, round: number) {
  const { s, db, receiver } = w;
  const { templates } = prepared;
  const definition = journeyDef(prepared.entry, [
    messageNode("first", templates.first, "wait"),
    delayNode(DELAY_S, "split"),
    { id: "split", type: "SegmentSplitNode", segment: prepared.pro, trueChild: "second-pro", falseChild: "second-std" },
    messageNode("second-pro", templates.secondPro, "ExitNode"),
    messageNode("second-std", templates.secondStd, "ExitNode"),
  ]);
  receiver.reset();
  const cpuBefore = s.cpu();
  const sent = performance.now();
  const j = await s.admin("PUT", "/api/admin/journeys", { name: `bench-entry-${round}`, status: "Running", definition });
  const answered = performance.now();
  const { rows } = await db.query<{ ms: number }>(
    "SELECT extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000 AS ms FROM journeys WHERE workspace_id = $1 AND id = $2",
    [s.workspaceId, j.id],
  );
  const commit = perfOf(Number(rows[0]!.ms));
  log(`journey started (PUT answered in ${secs(answered - sent)}); waiting for ${N} first messages`);
  await until(
    "first messages",
    () => receiver.path("/first").count,
    (n) => n >= N,
    // Generous: the entry of N runs has been measured to grow with N² (see the report).
    120_000 + N * 15,
  );
  const firstNode = { ...receiver.path("/first") };
  log(`first messages: ${firstNode.count} in ${secs(firstNode.last - firstNode.first)}; waiting for the delay and the second messages`);
  const second = () => merged([receiver.path("/second-pro"), receiver.path("/second-std")]);
  await until(
    "second messages",
    () => second().count,
    (n) => n >= N,
    DELAY_S * 1000 + 120_000 + N * 3,
  );
  const secondNode = second();
  const cpuAfter = s.cpu();
  // The whole journey's cost (entry, moves, both message nodes) per message sent.
  const cpu = {
    server: (cpuAfter.server - cpuBefore.server) / (2 * N),
    postgres: (cpuAfter.postgres - cpuBefore.postgres) / (2 * N),
  };
  // Where the time went: runs entered (the entry job's clock), deliveries queued by the first
  // advance batches (created_at: their transaction's start).
  const { rows: phases } = await db.query<{ entered: number; queued_first: number; queued_last: number }>(
    `SELECT (SELECT extract(epoch FROM min(entered_at)) * 1000 FROM journey_runs WHERE workspace_id = $1 AND journey_id = $2) AS entered,
       extract(epoch FROM min(created_at)) * 1000 AS queued_first, extract(epoch FROM max(created_at)) * 1000 AS queued_last
     FROM deliveries WHERE workspace_id = $1 AND journey_id = $2 AND node_id = 'first'`,
    [s.workspaceId, j.id],
  );
  const p = phases[0]!;
  // A run moves on after its last message is sent; with delivery policies that can hold, only once
  // that message's mark wakes it: the stats once every run has completed (or after a minute).
  const readStats = () => s.admin("GET", `/api/admin/journeys/${j.id}/stats`);
  const stats = await until("runs completed", readStats, (st) => st.completed >= N, 60_000, 250).catch(async (err) => {
    log((err as Error).message);
    return readStats();
  });
  return {
    commit,
    answered,
    firstNode,
    secondNode,
    entered: perfOf(Number(p.entered)),
    queuedFirst: perfOf(Number(p.queued_first)),
    queuedLast: perfOf(Number(p.queued_last)),
    stats,
    cpu,
    pro: receiver.path("/second-pro").count,
    duplicates: receiver.state.duplicates,
  };
}

/** The timers journey: entry (an empty hand-set segment) → delay 60 s → exit. */
async function timersJourney(w: World) {
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
async function timers(w: World, journey: { id: string; version: number }, prefix: string, stepMs: number) {
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

/**
 * Phase 4: entry latency. Track events of an EventEntryNode journey's event, one per request at a
 * steady rate (ENTRY_RATE/s for ENTRY_SECONDS s, each from a new user): for each, the event's
 * commit (pg_xact_commit_timestamp of its row) → the commit that started its run.
 */
async function entryLatency(w: World) {
  const { s, db } = w;
  const tpl = await template(w, "entry-latency", "/entry");
  const j = await s.admin("PUT", "/api/admin/journeys", {
    name: "entry-latency",
    status: "Running",
    definition: {
      entryNode: { type: "EventEntryNode", event: "Bench Entered", child: "hello" },
      nodes: [messageNode("hello", tpl, "ExitNode")],
      exitNode: { type: "ExitNode", id: "ExitNode" },
    },
  });
  const auth = `Basic ${Buffer.from(`${s.writeKey}:`).toString("base64")}`;
  const total = ENTRY_RATE * ENTRY_SECONDS;
  const start = performance.now();
  const sends: Promise<unknown>[] = [];
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / ENTRY_RATE;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    sends.push(
      fetch(`${s.base}/api/public/apps/track`, {
        method: "POST",
        headers: { authorization: auth, "content-type": "application/json" },
        body: JSON.stringify({ userId: `entrant-${i}`, event: "Bench Entered", messageId: `entry-${i}`, properties: { i } }),
      }).then((r) => r.text()),
    );
  }
  await Promise.all(sends);
  await until(
    "entry-latency runs",
    async () => Number((await db.query("SELECT count(*) AS n FROM journey_runs WHERE journey_id = $1", [j.id])).rows[0].n),
    (n) => n === total,
    60_000,
  );
  // The run's first commit is its insert: entered_at is the runtime's clock just before it.
  const { rows } = await db.query<{ ms: number }>(
    `SELECT extract(epoch FROM r.entered_at - pg_xact_commit_timestamp(e.xmin)) * 1000 AS ms
     FROM journey_runs r JOIN events e ON e.workspace_id = r.workspace_id AND e.message_id = r.event ->> 'messageId'
     WHERE r.journey_id = $1 ORDER BY 1`,
    [j.id],
  );
  const at = (q: number) => Number(rows[Math.min(rows.length - 1, Math.floor(q * rows.length))]!.ms);
  return { total, p50: at(0.5), p95: at(0.95), p99: at(0.99), max: Number(rows[rows.length - 1]!.ms) };
}

interface Round {
  first: number;
  second: number;
  bare: number;
  toFirst: number;
  /** Every run completed, the split sent half to pro, every first message sent, no webhook-id repeated. */
  whole: boolean;
  text: string;
}

/** One round's figures: the message nodes' rates, the bare loop's, and where the time went. */
function roundOf(e: Awaited<ReturnType<typeof entryAtOnce>>, bare: number): Round {
  const first = e.firstNode.count / ((e.firstNode.last - e.firstNode.first) / 1000);
  const second = e.secondNode.count / ((e.secondNode.last - e.secondNode.first) / 1000);
  const toFirst = e.firstNode.first - e.commit;
  const stats = e.stats as JourneyStats;
  const sentFirst = stats.nodes.find((n) => n.id === "first")?.sent;
  const whole = stats.completed === N && e.pro === Math.ceil(N / 2) && e.duplicates === 0 && sentFirst === N;
  const text =
    `first node ${first.toFixed(0)}/s (${(first / bare).toFixed(2)}×), second ${second.toFixed(0)}/s (${(second / bare).toFixed(2)}×), ` +
    `bare loop ${bare.toFixed(0)}/s; commit → runs entered ${secs(e.entered - e.commit)}, → first batch queued ` +
    `${secs(e.queuedFirst - e.commit)}, → last batch queued ${secs(e.queuedLast - e.commit)}, → first message ${secs(toFirst)}, ` +
    `→ last first message ${secs(e.firstNode.last - e.commit)} (PUT answered ${secs(e.answered - e.commit)} after its commit); ` +
    `runs completed / split pro / repeated webhook-ids ${stats.completed}/${e.pro}/${e.duplicates}; CPU per message (the whole ` +
    `journey): server ${(e.cpu.server * 1e6).toFixed(0)} µs, PostgreSQL ${(e.cpu.postgres * 1e6).toFixed(0)} µs`;
  return { first, second, bare, toFirst, whole, text };
}

async function main() {
  const receiver = startReceiver();
  const receiverUrl = await receiver.listen();
  const s = await startBenchServer("journeys", { postgresFlags: ["-c", "track_commit_timestamp=on"] });
  const db = new pg.Client({ connectionString: s.dbUrl });
  const load: Record<string, string> = {};
  const phase = async <T>(key: string, label: string, f: () => Promise<T>): Promise<T> => {
    log(`${label}…`);
    const before = os.loadavg()[0]!;
    const out = await f();
    load[key] = `${before.toFixed(1)}→${os.loadavg()[0]!.toFixed(1)}`;
    return out;
  };
  try {
    await db.connect();
    const w: World = { s, db, receiver, receiverUrl };
    await s.admin("PUT", "/api/admin/providers", { channel: "Webhook", type: "Webhook", config: { signingSecret: SIGNING_SECRET } });
    const policies = await policiesFromEnv(s);

    const prepared = await prepareEntry(w);
    // Interleaved rounds, the bare loop after the journey in odd rounds and before it in even ones.
    const rounds: Round[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const measureBare = () =>
        phase(`bare${i + 1}`, `bare loop: ${N} signed requests`, () => {
          receiver.reset();
          return bareLoop(receiverUrl, N);
        });
      const bareFirst = i % 2 === 1;
      let bare = bareFirst ? await measureBare() : 0;
      const e = await phase(`1.${i + 1}`, `(1) round ${i + 1}: ${N} users enter one journey with one commit`, () =>
        entryAtOnce(w, prepared, i + 1),
      );
      if (!bareFirst) bare = await measureBare();
      const round = roundOf(e, bare);
      rounds.push(round);
      log(`round ${i + 1}: ${round.text}`);
    }
    const journey = await timersJourney(w);
    const spread = await phase("2", `(2) ${N} timers due over ${SPREAD_MS / 1000} s`, () => timers(w, journey, "spread-", SPREAD_MS / N));
    const burst = await phase("3", `(3) ${N} timers due at one instant`, () => timers(w, journey, "burst-", 0));
    const entry = await phase("4", `(4) entry latency: ${ENTRY_RATE} track events/s for ${ENTRY_SECONDS} s`, () => entryLatency(w));

    const ms = (x: number) => `${(x * 1000).toFixed(0)} ms`;
    const line = (name: string, value: string, target: string, ok: boolean) => summaryLine(name, value, target, ok, 60);
    console.log(`\n=== bench:journeys (N = ${N}, ${policies.label}) ===`);
    if (rounds.length > 0) printRounds(rounds, policies.target, line);
    for (const [name, t] of [
      [`(2) ${N} timers over ${SPREAD_MS / 1000} s`, spread],
      [`(3) ${N} timers at one instant`, burst],
    ] as const) {
      const [p50, p95, p99] = t.commit;
      console.log(
        `${name}: ${t.moved} moved past the delay${t.left ? `, ${t.left} NEVER` : ""}; lateness (commit − due) p50 ${ms(p50!)}, p95 ${ms(p95!)}, ` +
          `p99 ${ms(p99!)}, max ${ms(t.commitMax)}; runtime's own (its clock − due) p50 ${ms(t.runtime[0]!)}, p99 ${ms(t.runtime[2]!)}, ` +
          `max ${ms(t.runtimeMax)}; histogram ≤ 1 s: ${(t.histogramWithin1s * 100).toFixed(1)} % of ${t.histogramCount}; ` +
          `CPU per run: server ${t.cpu.server.toFixed(0)} µs, PostgreSQL ${t.cpu.postgres.toFixed(0)} µs` +
          (t.insertLate ? "; WARNING: the insert committed after the first due time" : ""),
      );
    }
    line("(2) timer lateness p99 (s)", spread.commit[2]!.toFixed(3), "≤ 1", spread.left === 0 && spread.commit[2]! <= 1);
    line("(3) due → all past the delay (s)", burst.commitMax.toFixed(2), "≤ 10", burst.left === 0 && burst.commitMax <= 10);
    console.log(
      `(4) ${entry.total} EventEntryNode entries, one track request each at ${ENTRY_RATE}/s: event commit → run started ` +
        `p50 ${entry.p50.toFixed(0)} ms, p95 ${entry.p95.toFixed(0)} ms, p99 ${entry.p99.toFixed(0)} ms, max ${entry.max.toFixed(0)} ms`,
    );
    line("(4) entry latency p95 (s)", (entry.p95 / 1000).toFixed(3), "≤ 1", entry.p95 <= 1000);
    console.log(
      `load average (1 min) per phase: ${Object.entries(load)
        .map(([k, v]) => `${k} ${v}`)
        .join(", ")} on ${os.cpus().length} cores`,
    );
  } finally {
    await db.end().catch(() => {});
    await s.stop();
    await receiver.close();
  }
}

/** Phase 1's figures: each round, and the medians against the target. */
function printRounds(rounds: Round[], target: number, line: (name: string, value: string, target: string, ok: boolean) => void) {
  const firstRatios = rounds.map((r) => r.first / r.bare);
  const secondRatios = rounds.map((r) => r.second / r.bare);
  const [firstRatio, secondRatio] = [median(firstRatios), median(secondRatios)];
  const mid = rounds[firstRatios.indexOf(firstRatio)]!;
  const list = (xs: number[]) => xs.map((x) => x.toFixed(2)).join(", ");

  console.log(
    "(1) entry: the members of a computed segment enter with the commit of the journey's PUT (status Running);\n" +
      `    the runs are inserted after it by the runtime's entry job. Each whole journey ran to its end. ${ROUNDS} rounds:`,
  );
  for (const [i, r] of rounds.entries()) console.log(`    round ${i + 1}: ${r.text}`);
  line("(1) entering commit → first message (ms, slowest round)", Math.max(...rounds.map((r) => r.toFirst)).toFixed(0), "—", true);
  line(`(1) first message node: messages/s (${N}; the median round)`, mid.first.toFixed(0), "—", true);
  line("    bare undici loop, signed requests/s (that round)", mid.bare.toFixed(0), "—", true);
  line(`(1) first message node / bare loop (median: ${list(firstRatios)})`, firstRatio.toFixed(2), `≥ ${target}`, firstRatio >= target);
  line(`(1) second message node / bare loop (median: ${list(secondRatios)})`, secondRatio.toFixed(2), `≥ ${target}`, secondRatio >= target);
  line(
    "(1) rounds whose runs all completed, split right, no repeated id",
    `${rounds.filter((r) => r.whole).length}/${ROUNDS}`,
    `${ROUNDS}/${ROUNDS}`,
    rounds.every((r) => r.whole),
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
