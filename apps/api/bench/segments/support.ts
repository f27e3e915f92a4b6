// Shared by the phases of bench:segments (../segments.ts): the BENCH_* settings, embedded PostgreSQL
// and the server under test (startBench), HTTP helpers, waiting for the engine to drain, the 20
// live segments, the event generators, and figures' formatting.
import { type ChildProcess, spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { SegmentDefinition } from "@tidings/schema";
import pg from "pg";
import { freePort, startEmbeddedPostgres } from "../../src/db/embedded.ts";
import { migrate } from "../../src/db/migrate.ts";
import { waitForLine } from "../support.ts";

const here = path.dirname(fileURLToPath(import.meta.url));
// The BENCH_* settings: ../segments.ts's header describes them.
export const PHASES = process.env.BENCH_PHASES ?? "abdecf";
export const USERS = Number(process.env.BENCH_USERS ?? 1_000_000);
export const EVENTS = Number(process.env.BENCH_EVENTS ?? 5_000_000);
export const ROUND_SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
export const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
export const EXPLAIN = process.env.BENCH_EXPLAIN === "1";
/** Loads pg_stat_statements and prints the statements that took the most time in each phase. */
export const STATEMENTS = process.env.BENCH_STATEMENTS === "1";
/** Leaves PostgreSQL (and the server) running after the run, for experiments, until SIGINT/SIGTERM. */
export const KEEP = process.env.BENCH_KEEP === "1";
/** The server's entry point (another build can be compared, e.g. a patched copy inside apps/api). */
const SERVER_JS = path.resolve(process.env.BENCH_SERVER_JS ?? path.join(here, "..", "..", "dist", "main.js"));
/** Loads auto_explain, which logs the plans of statements slower than this (ms); see BENCH_PG_LOG. */
const AUTO_EXPLAIN_MS = Number(process.env.BENCH_AUTO_EXPLAIN_MS ?? 0);
const ROOT_KEY = "bench-root-key-0123456789abcdef";

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
export const secs = (ms: number) => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(2)} s` : "never (gave up)");
export const r0 = (x: number) => Math.round(x).toLocaleString("en-US");
export const log = (msg: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${msg}`);

/** Nearest-rank percentile of an unsorted list (NaN when empty). */
export function pct(xs: number[], q: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}
export const median = (xs: number[]) => pct(xs, 0.5);
/** A latency in ms; Infinity stands for "never happened within the run". */
const msOf = (x: number) => (Number.isFinite(x) ? `${r0(x)} ms` : "never");
export const dist = (xs: number[]) =>
  `p50 ${msOf(pct(xs, 0.5))}, p95 ${msOf(pct(xs, 0.95))}, p99 ${msOf(pct(xs, 0.99))}, max ${msOf(pct(xs, 1))} (n=${xs.length})`;

/** A pg client whose connection errors (PostgreSQL stopping at the end) fail its queries, not the process. */
export function client(url: string) {
  const c = new pg.Client({ connectionString: url });
  c.on("error", () => {});
  return c;
}

// ---------------------------------------------------------------------------------------
// PostgreSQL and the server

/** What main() and every phase work with: made by startBench(), passed to each phase. */
export interface Bench {
  /** PostgreSQL's connection string. */
  url: string;
  /** The server's address, http://127.0.0.1:port. */
  base: string;
  /** The server's process ((f) stops it meanwhile). */
  server: ChildProcess;
  /** The server's first 50 lines on stderr. */
  serverLog: string[];
  /** A connected session, for the phases' own queries. */
  admin: pg.Client;
  /** The default workspace, whose keys the server printed at its start. */
  defaultWs: Workspace;
  /** 503s answered by the server's event-loop-delay guard (under-pressure), retried after a second. */
  overloaded: number;
  /** Stops the server and PostgreSQL, and removes the data directory. */
  stop(): Promise<void>;
}

/** Starts the embedded PostgreSQL (migrated) and the server on it, and waits for the server to listen. */
export async function startBench(): Promise<Bench> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "tidings-bench-segments-"));
  const flags = ["-c", "track_commit_timestamp=on"];
  if (STATEMENTS) flags.push("-c", "pg_stat_statements.track_planning=on", "-c", "shared_preload_libraries=pg_stat_statements");
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
  const base = `http://127.0.0.1:${port}`;
  const server = spawn(process.execPath, [SERVER_JS], {
    env: {
      ...process.env,
      DATABASE_URL: url,
      TIDINGS_PRINT_KEYS: "true",
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
  const stop = async () => {
    await admin.end().catch(() => {});
    server.kill("SIGTERM");
    await new Promise((r) => server.once("exit", r));
    await db.stop();
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    // With DATABASE_URL the default workspace's keys are printed once (never saved to a file), to a pipe only with TIDINGS_PRINT_KEYS.
    const [, workspaceId, writeKey, adminKey] = await waitForLine(
      server,
      /Created workspace "default" \(([0-9a-f-]{36})\)[\s\S]*?write key:\s+(\S+)[\s\S]*?admin API key:\s+(\S+)[\s\S]*?listening on /,
    );
    const defaultWs: Workspace = { id: workspaceId!, writeKey: writeKey!, adminKey: adminKey! };
    await admin.connect();
    return { url, base, server, serverLog, admin, defaultWs, overloaded: 0, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

// ---------------------------------------------------------------------------------------
// HTTP

async function call<T>(bench: Bench, method: string, p: string, bearer: string, body?: unknown): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const res = await fetch(`${bench.base}${p}`, {
      method,
      headers: { authorization: `Bearer ${bearer}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status === 503 && attempt < 30) {
      bench.overloaded++;
      await sleep(1000);
      continue;
    }
    if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${text}`);
    return (text ? JSON.parse(text) : undefined) as T;
  }
}

export interface Workspace {
  id: string;
  writeKey: string;
  adminKey: string;
}

export async function createWorkspace(bench: Bench, name: string): Promise<Workspace> {
  const r = await call<{ workspace: { id: string }; writeKey: string; adminApiKey: string }>(
    bench,
    "POST",
    "/api/admin/workspaces",
    ROOT_KEY,
    { name },
  );
  return { id: r.workspace.id, writeKey: r.writeKey, adminKey: r.adminApiKey };
}

export interface SegmentResource {
  id: string;
  lastRecomputed?: number;
  memberCount: number;
}

export const putSegment = (bench: Bench, ws: Workspace, name: string, definition: SegmentDefinition) =>
  call<SegmentResource>(bench, "PUT", "/api/admin/segments", ws.adminKey, { name, definition });
const getSegment = (bench: Bench, ws: Workspace, id: string) =>
  call<SegmentResource>(bench, "GET", `/api/admin/segments/${id}`, ws.adminKey);

/** Polls every 50 ms until the segment's lastRecomputed is set; returns it and when it was seen. */
export async function untilRecomputed(bench: Bench, ws: Workspace, id: string, timeoutMs = 300_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await getSegment(bench, ws, id);
    if (s.lastRecomputed !== undefined) return { seen: Date.now(), segment: s };
    if (Date.now() > deadline) throw new Error(`segment ${id} not recomputed within ${timeoutMs} ms`);
    await sleep(50);
  }
}

/** POST /batch with the write key; resolves at the response (204 expected). */
export async function sendBatch(bench: Bench, ws: Workspace, batch: unknown[]): Promise<void> {
  const body = JSON.stringify({ batch });
  for (let attempt = 1; ; attempt++) {
    const res = await fetch(`${bench.base}/api/public/apps/batch`, {
      method: "POST",
      headers: { authorization: `Basic ${ws.writeKey}`, "content-type": "application/json" },
      body,
    });
    const text = await res.text();
    if (res.status === 503 && attempt < 30) {
      bench.overloaded++;
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
export async function discardBacklog(db: pg.Client, workspaceId: string): Promise<number> {
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
export async function untilDrained(db: pg.Client, workspaceId: string, timeoutMs = 300_000): Promise<number> {
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
export const def = (entryNode: Node, nodes: Node[] = []): SegmentDefinition => ({ entryNode, nodes });
export const trait = (id: string, p: string, operator: unknown) => ({ type: "Trait", id, path: p, operator }) as Node;
export const performed = (id: string, fields: Record<string, unknown>) =>
  ({ type: "Performed", id, times: 1, timesOperator: ">=", ...fields }) as Node;
export const gte = (value: number) => ({ type: "GreaterThanOrEqual", value });
export const eq = (value: string | number | boolean) => ({ type: "Equals", value });

export const TRAIT_PRO = def(trait("pro", "plan", eq("pro")));
export const BOUGHT_TWICE_7D = def(
  performed("b", { event: "Bought", times: 2, withinSeconds: 7 * 86_400, properties: [{ path: "amount", operator: gte(10) }] }),
);

/** The 20 live segments of (b) and (c); the first is the one (b) follows. */
export function liveSegments(): { name: string; definition: SegmentDefinition }[] {
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

export async function createLiveSegments(bench: Bench, ws: Workspace): Promise<SegmentResource[]> {
  const created = [];
  for (const s of liveSegments()) created.push(await putSegment(bench, ws, s.name, s.definition));
  for (const s of created) await untilRecomputed(bench, ws, s.id, 60_000);
  return created;
}

// ---------------------------------------------------------------------------------------
// Events

/** Identify events per batch in (b), (e) and (f). */
export const B_IDENTIFIES = 5;
/** Track events per batch: (b) offers 2 000 events/s, (e) 10 000. */
export const B_TRACKS = 15;
export const E_TRACKS = 95;

const COUNTRIES = ["DE", "FR", "US", "GB", "ES"];
let rnd = 42;
/**
 * A deterministic pseudo-random integer in [0, n), from the generator's high bits: its low bits
 * repeat with a short period (`rnd % 20000` drew only multiples of 8, so (b) and (e) sent every
 * track event to one user in eight, each with eight times the history).
 */
export function rand(n: number): number {
  rnd = (Math.imul(rnd, 1103515245) + 12345) & 0x7fffffff;
  return Math.floor((rnd / 0x80000000) * n);
}

export function trackEvent(run: string, seq: number, userId: string) {
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

export function identifyEvent(messageId: string, userId: string, plan: string) {
  return {
    type: "identify",
    userId,
    messageId,
    traits: { plan, country: COUNTRIES[rand(COUNTRIES.length)], score: rand(100), lastSeen: new Date().toISOString() },
  };
}

// ---------------------------------------------------------------------------------------
// Measuring

export async function printStatements(db: pg.Client) {
  const { rows } = await db.query(
    `SELECT calls, round(total_exec_time)::int8 AS total_ms, round(mean_exec_time::numeric, 2) AS mean_ms, rows,
       round(total_plan_time)::int8 AS plan_ms,
       regexp_replace(query, '\\s+', ' ', 'g') AS query
     FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY total_exec_time DESC LIMIT 25`,
  );
  for (const r of rows) {
    // A segment evaluation is told apart by its membership condition.
    const q = r.query as string;
    const end = q.indexOf(" AS member,");
    const member = end < 0 ? undefined : q.slice(q.lastIndexOf("SELECT p.profile_id, ", end) + 21, end);
    const what = member ? `segment evaluation, member = ${member.slice(0, 160)}` : r.query.slice(0, 200);
    console.log(`  ${r.total_ms} ms total (and ${r.plan_ms} ms planning), ${r.calls} calls, ${r.mean_ms} ms mean, ${r.rows} rows: ${what}`);
  }
}

/**
 * CPU time (ms) used so far by this machine's PostgreSQL processes (those alive now: the pool keeps
 * its connections) and by this process: steadier than wall time on a shared machine.
 */
export async function cpuMs(): Promise<number> {
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
