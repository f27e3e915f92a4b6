// pnpm bench:partitioning — what range-partitioning `events` by time would cost ingestion (issue 20,
// item 5: adopt it if it costs ≤ 10 % of ingest throughput). One embedded (durable) PostgreSQL holds
// three databases, each served by its own server process (TIDINGS_ROLE=api, LOG_LEVEL=warn):
//  A  `events` as it is: one table, primary key (workspace_id, message_id);
//  B  `events` partitioned by RANGE (event_time), one partition a day (60 days back, 7 ahead) and a
//     DEFAULT one; the primary key must include the partition key, so it is
//     (workspace_id, message_id, event_time) and deduplicates a replay only if it carries the same
//     event time;
//  C  B plus exact deduplication: a row trigger inserts (workspace_id, message_id) into an
//     unpartitioned `event_ids` table, whose primary key refuses a replay as `events` does today.
// The same /batch load (100-event batches, unique messageIds, 10 % identify; 90 % of events
// without a timestamp, i.e. now, 10 % with one spread over the last 30 days) is sent to each server
// in alternating rounds (the order rotates each round), and the medians compared, so drift in a
// shared machine's speed hits all three alike. Load generator, servers and PostgreSQL share the
// machine's cores: compare the ratios, not the absolutes.
//
// Then the same comparison without HTTP, where the variants differ: the server's own fast-path
// commit (ingest/fast-path.ts: events, profiles, outbox in one statement) of 1 000 events at a
// time, sent to the three databases in turn, commit by commit (the order rotating), for
// BENCH_STATEMENT_SECONDS (default 60). Interleaving single commits cancels drift in the machine's
// speed far better than rounds of seconds do; the ratio is the database's share of the cost, the
// bound of what partitioning can cost the end-to-end figure.
//
// The servers run the code as it is: a commit of new messageIds takes the fast path (one plain
// INSERT, which works on every variant). A replay, an alias or a group takes the transactional path,
// whose ON CONFLICT (workspace_id, message_id) has no matching unique index on B or C — adopting
// partitioning needs that statement changed; this bench sends none of those.
//
// BENCH_SECONDS (default 10) per round, BENCH_ROUNDS (default 3), BENCH_WARMUP_SECONDS (default 5).
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import pg from "pg";
import type { BatchEvent } from "@tidings/schema";
import { freePort, startEmbeddedPostgres } from "../src/db/embedded.ts";
import { migrate } from "../src/db/migrate.ts";
import { storeInOneStatement } from "../src/ingest/fast-path.ts";
import { normalizeEvent } from "../src/ingest/normalize.ts";
import type { WorkspaceEvent } from "../src/ingest/rows.ts";
import { waitForLine } from "./support.ts";

const here = path.dirname(fileURLToPath(import.meta.url));
const DURATION = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const WARMUP = Number(process.env.BENCH_WARMUP_SECONDS ?? 5);
const STATEMENT_SECONDS = Number(process.env.BENCH_STATEMENT_SECONDS ?? 60);
/** Events per commit in the statement comparison. */
const COMMIT_EVENTS = 1000;
const BATCH = 100;
const CONNECTIONS = 16;
const DAY = 86_400_000;
/** Bodies are built before the clock starts; sized for this many events/s per server at most. */
const MAX_EVENTS_PER_SECOND = 40_000;

type Variant = "A" | "B" | "C";
const VARIANTS: Variant[] = ["A", "B", "C"];
const LABEL: Record<Variant, string> = {
  A: "unpartitioned (today)",
  B: "partitioned by day, PK with event_time",
  C: "partitioned by day + event_ids dedupe table",
};

const runId = randomUUID().slice(0, 8);
let seq = 0;
function batchBody(now: number): string {
  const batch = [];
  for (let i = 0; i < BATCH; i++) {
    const n = seq++;
    const userId = `user-${n % 50_000}`;
    // One event in ten arrives late, with its own timestamp (mobile queues, imports).
    const late =
      n % 10 === 5 ? { timestamp: new Date(now - (Math.floor(n / 10) % 30) * DAY - ((n * 7919) % 86_400) * 1000).toISOString() } : {};
    batch.push(
      i % 10 === 0
        ? { type: "identify", userId, messageId: `${runId}-${n}`, traits: { email: `${userId}@example.com`, plan: n % 3 ? "free" : "pro" } }
        : {
            type: "track",
            userId,
            messageId: `${runId}-${n}`,
            event: "Item Viewed",
            properties: { sku: `sku-${n % 977}`, price: n % 100, currency: "EUR" },
            context: { ip: "10.0.0.1", library: { name: "bench", version: "1" } },
            ...late,
          },
    );
  }
  return JSON.stringify({ batch, sentAt: new Date(now).toISOString() });
}

/** Replaces `events` with a table partitioned by event_time, one partition a day, same columns and indexes. */
async function partitionEvents(db: pg.Client, dedupe: boolean) {
  const view = (await db.query<{ def: string }>("SELECT pg_get_viewdef('events_resolved'::regclass, true) AS def")).rows[0]!.def;
  const indexes = (
    await db.query<{ def: string }>(
      "SELECT indexdef AS def FROM pg_indexes WHERE schemaname = 'public' AND tablename = 'events' AND indexname <> 'events_pkey'",
    )
  ).rows.map((r) => r.def);
  await db.query("BEGIN");
  await db.query("DROP VIEW events_resolved");
  await db.query("ALTER TABLE events RENAME TO events_unpartitioned");
  await db.query("CREATE TABLE events (LIKE events_unpartitioned INCLUDING DEFAULTS) PARTITION BY RANGE (event_time)");
  await db.query("DROP TABLE events_unpartitioned");
  await db.query("ALTER TABLE events ADD PRIMARY KEY (workspace_id, message_id, event_time)");
  for (const def of indexes) await db.query(def); // CREATE INDEX … ON public.events …: on every partition
  const today = Math.floor(Date.now() / DAY) * DAY;
  for (let d = -60; d <= 7; d++) {
    const from = new Date(today + d * DAY);
    const name = `events_p${from.toISOString().slice(0, 10).replace(/-/g, "")}`;
    await db.query(
      `CREATE TABLE ${name} PARTITION OF events FOR VALUES FROM ('${from.toISOString()}') TO ('${new Date(from.getTime() + DAY).toISOString()}')`,
    );
  }
  await db.query("CREATE TABLE events_default PARTITION OF events DEFAULT");
  await db.query(`CREATE VIEW events_resolved AS ${view}`);
  if (dedupe) {
    await db.query(
      "CREATE TABLE event_ids (workspace_id uuid NOT NULL, message_id varchar(100) NOT NULL, PRIMARY KEY (workspace_id, message_id))",
    );
    await db.query(`CREATE FUNCTION bench_event_id() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO event_ids (workspace_id, message_id) VALUES (NEW.workspace_id, NEW.message_id); RETURN NEW; END $$`);
    await db.query("CREATE TRIGGER event_ids BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION bench_event_id()");
  }
  await db.query("COMMIT");
}

interface Server {
  variant: Variant;
  url: string;
  dbUrl: string;
  writeKey: string;
  process: ChildProcess;
  next: number;
}

async function startServer(variant: Variant, dbUrl: string, dataDir: string): Promise<Server> {
  const port = await freePort();
  const child = spawn(process.execPath, ["--import", "tsx", path.join(here, "..", "src", "main.ts")], {
    env: {
      ...process.env,
      DATABASE_URL: dbUrl,
      PORT: String(port),
      LOG_LEVEL: "warn",
      TIDINGS_ROLE: "api",
      TIDINGS_MIGRATE_ON_START: "false",
      TIDINGS_DATA_DIR: dataDir,
      TIDINGS_ROOT_KEY: "bench-root-key-0123456789abcdef",
      TIDINGS_SECRET_KEY: "bench-secret-key-0123456789abcdef0123456789",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const [, writeKey] = await waitForLine(child, /write key:\s+(\S+)[\s\S]*?listening on /);
  return { variant, url: `http://127.0.0.1:${port}`, dbUrl, writeKey: writeKey!, process: child, next: 0 };
}

/**
 * The fast-path commit of the same 1 000 events to each database in turn (the order rotating each
 * time) until STATEMENT_SECONDS have passed; the seconds spent in each variant's statements.
 */
async function compareCommits(servers: Server[], now: number) {
  const pools = new Map<Variant, { pool: pg.Pool; workspaceId: string }>();
  for (const s of servers) {
    const pool = new pg.Pool({ connectionString: s.dbUrl, max: 1 });
    const { rows } = await pool.query<{ id: string }>("SELECT id FROM workspaces LIMIT 1");
    pools.set(s.variant, { pool, workspaceId: rows[0]!.id });
  }
  const spent: Record<Variant, { seconds: number; events: number; commits: number }> = {
    A: { seconds: 0, events: 0, commits: 0 },
    B: { seconds: 0, events: 0, commits: 0 },
    C: { seconds: 0, events: 0, commits: 0 },
  };
  const started = performance.now();
  for (let k = 0; performance.now() - started < STATEMENT_SECONDS * 1000; k++) {
    const receivedAt = new Date();
    const events: { ev: BatchEvent & { type: string }; sentAt: string }[] = [];
    for (let b = 0; b < COMMIT_EVENTS / BATCH; b++) {
      const body = JSON.parse(batchBody(now)) as { batch: (BatchEvent & { type: string })[]; sentAt: string };
      for (const ev of body.batch) events.push({ ev, sentAt: body.sentAt });
    }
    for (let i = 0; i < VARIANTS.length; i++) {
      const v = VARIANTS[(i + k) % VARIANTS.length]!;
      const { pool, workspaceId } = pools.get(v)!;
      const rows: WorkspaceEvent[] = events.map(({ ev, sentAt }) => ({
        workspaceId,
        ev: normalizeEvent(ev, ev.type as never, { sentAt }, receivedAt, 32 * 1024, "batch"),
      }));
      const t = performance.now();
      const stored = await storeInOneStatement(pool, rows);
      spent[v].seconds += (performance.now() - t) / 1000;
      if (stored !== rows.length) throw new Error(`${v}: the fast path refused a commit of new events`);
      spent[v].events += stored;
      spent[v].commits++;
    }
  }
  for (const { pool } of pools.values()) await pool.end();
  return spent;
}

async function main() {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "tidings-bench-partitioning-"));
  const db = await startEmbeddedPostgres({ dataDir });
  const servers: Server[] = [];
  try {
    const admin = new pg.Client({ connectionString: db.urlFor("postgres") });
    await admin.connect();
    for (const v of VARIANTS) {
      const name = `bench_${v.toLowerCase()}`;
      await admin.query(`CREATE DATABASE ${name}`);
      const url = db.urlFor(name);
      await migrate(url);
      if (v !== "A") {
        const c = new pg.Client({ connectionString: url });
        await c.connect();
        await partitionEvents(c, v === "C");
        await c.end();
      }
      servers.push(await startServer(v, url, dataDir));
    }
    await admin.end();

    const now = Date.now();
    const bodies = Array.from({ length: Math.ceil(((ROUNDS * DURATION + WARMUP) * MAX_EVENTS_PER_SECOND) / BATCH) }, () => batchBody(now));
    const load = (s: Server, seconds: number) =>
      autocannon({
        url: s.url,
        duration: seconds,
        connections: CONNECTIONS,
        requests: [
          {
            method: "POST",
            path: "/api/public/apps/batch",
            headers: { authorization: `Basic ${s.writeKey}`, "content-type": "application/json" },
            setupRequest: (req) => ({ ...req, body: bodies[s.next++ % bodies.length] }),
          },
        ],
      });
    if (WARMUP > 0) for (const s of servers) await load(s, WARMUP);
    const perSecond: Record<Variant, number[]> = { A: [], B: [], C: [] };
    const errors: Record<Variant, number> = { A: 0, B: 0, C: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      const order = servers.map((_, i) => servers[(i + round) % servers.length]!);
      const line: string[] = [];
      for (const s of order) {
        const r = await load(s, DURATION);
        perSecond[s.variant].push((r["2xx"] * BATCH) / DURATION);
        errors[s.variant] += r.non2xx + r.errors;
        line.push(`${s.variant} ${Math.round((r["2xx"] * BATCH) / DURATION).toLocaleString("en-US")}`);
      }
      console.log(`round ${round + 1} (${order.map((s) => s.variant).join(", ")}): ${line.join(", ")} events/s`);
    }
    if (servers.some((s) => s.next > bodies.length)) throw new Error("ran out of unique batch bodies; raise MAX_EVENTS_PER_SECOND");

    const statements = await compareCommits(servers, now);

    // Every acknowledged event is stored exactly once in each database.
    const stored: Record<Variant, { rows: number; partitions: number }> = {} as never;
    for (const s of servers) {
      const c = new pg.Client({ connectionString: s.dbUrl });
      await c.connect();
      const { rows } = await c.query<{ rows: number; partitions: number }>(
        `SELECT (SELECT count(*) FROM events)::int AS rows,
           (SELECT count(DISTINCT tableoid) FROM events)::int AS partitions`,
      );
      stored[s.variant] = rows[0]!;
      await c.end();
    }
    const median = (xs: number[]) => {
      const sorted = [...xs].sort((a, b) => a - b);
      return sorted.length % 2 ? sorted[(sorted.length - 1) / 2]! : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2;
    };
    const r = (x: number) => Math.round(x).toLocaleString("en-US");
    console.log(
      `\nPartitioning benchmark: /batch ingestion, ${BATCH}-event batches, ${CONNECTIONS} connections, ${DURATION} s × ${ROUNDS} alternating rounds after ${WARMUP} s warm-up each, ${os.cpus().length} cores, one embedded PostgreSQL (fsync on)`,
    );
    const base = median(perSecond.A);
    for (const v of VARIANTS) {
      const m = median(perSecond[v]);
      const ratio = m / base;
      console.log(
        `${v} ${LABEL[v].padEnd(46)} ${r(m).padStart(8)} events/s (median)  ratio ${ratio.toFixed(3)}${v === "A" ? "" : ` → ${ratio >= 0.9 ? "within" : "beyond"} the 10 % budget`}; ${errors[v]} errors; ${r(stored[v].rows)} rows in ${stored[v].partitions} table(s)`,
      );
    }
    const commitBase = statements.A.events / statements.A.seconds;
    console.log(
      `\nThe fast-path commit alone (${COMMIT_EVENTS} events a statement, the databases in turn commit by commit, ${STATEMENT_SECONDS} s):`,
    );
    for (const v of VARIANTS) {
      const rate = statements[v].events / statements[v].seconds;
      const ratio = rate / commitBase;
      console.log(
        `${v} ${LABEL[v].padEnd(46)} ${r(rate).padStart(8)} events/s in its statements (${statements[v].commits} commits)  ratio ${ratio.toFixed(3)}${v === "A" ? "" : ` → ${ratio >= 0.9 ? "within" : "beyond"} the 10 % budget`}`,
      );
    }
    for (const s of servers) {
      const acked = s.next * BATCH + statements[s.variant].events;
      // autocannon may have sent a last request or two it did not count as completed.
      if (stored[s.variant].rows > acked || stored[s.variant].rows < acked - CONNECTIONS * BATCH)
        throw new Error(`${s.variant}: ${acked} events sent, ${stored[s.variant].rows} stored`);
    }
  } finally {
    for (const s of servers) s.process.kill("SIGTERM");
    await Promise.all(servers.map((s) => (s.process.exitCode === null ? new Promise((r) => s.process.once("exit", r)) : null)));
    await db.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
