// Shared by the benchmarks: the server as its own process on an embedded (durable) PostgreSQL,
// waiting for it to print what it must, the counting webhook receiver and the bare undici loop
// that the delivery benchmarks compare themselves with.
import { type ChildProcess, spawn } from "node:child_process";
import { createHmac, randomUUID } from "node:crypto";
import { appendFileSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { Agent, request } from "undici";
import { type EmbeddedDatabase, freePort, startEmbeddedPostgres } from "../src/db/embedded.ts";
import { migrate } from "../src/db/migrate.ts";

const here = path.dirname(fileURLToPath(import.meta.url));
/** The Webhook provider's signing secret: the bare loop signs with it too. */
export const SIGNING_SECRET = "bench-signing-secret-0123456789abcdef";
const ROOT_KEY = "bench-root-key-0123456789abcdef";

/** Resolves with the first match of `re` in the child's output (stdout and stderr together). */
export function waitForLine(child: ChildProcess, re: RegExp): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let buf = "";
    const on = (chunk: Buffer) => {
      buf += chunk.toString();
      const m = buf.match(re);
      if (m) resolve(m);
    };
    child.stdout?.on("data", on);
    child.stderr?.on("data", on);
    child.on("exit", (code) => reject(new Error(`process exited (${code}) before ready:\n${buf}`)));
  });
}

export interface BenchServer {
  /** The database's URL (for set-based loads and read-backs). */
  dbUrl: string;
  /** The server's base URL. */
  base: string;
  workspaceId: string;
  adminKey: string;
  writeKey: string;
  /** An admin API call with the default workspace's admin key; throws on a status ≥ 300. */
  // biome-ignore lint/suspicious/noExplicitAny: the benches read the answers' fields they set up
  admin(method: string, p: string, body?: unknown): Promise<any>;
  /** CPU seconds used so far by the server process and by PostgreSQL (every backend, ended ones included). */
  cpu(): { server: number; postgres: number };
  stop(): Promise<void>;
}

/** A process's CPU seconds from /proc (utime + stime, with its waited-for children's when `children`). */
function procCpu(pid: number, children: boolean): { seconds: number; ppid: number } {
  // Fields after the command's closing parenthesis: state is 3rd, ppid 4th, utime 14th, stime 15th, cutime 16th, cstime 17th.
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(f[11]) + Number(f[12]) + (children ? Number(f[13]) + Number(f[14]) : 0);
  return { seconds: ticks / 100, ppid: Number(f[1]) };
}

/** PostgreSQL's CPU seconds: the postmaster (with the backends it reaped) and its live backends. */
export function postgresCpu(postmaster: number): number {
  let total = procCpu(postmaster, true).seconds;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const c = procCpu(Number(entry), false);
      if (c.ppid === postmaster) total += c.seconds;
    } catch {
      // ended meanwhile
    }
  }
  return total;
}

/** pg_stat_statements loaded, counting nested statements and planning time (BENCH_PG_STATEMENTS). */
const STATEMENT_FLAGS = [
  "shared_preload_libraries=pg_stat_statements",
  "pg_stat_statements.track=all",
  "pg_stat_statements.track_planning=on",
].flatMap((flag) => ["-c", flag]);

/**
 * Embedded PostgreSQL (migrated) and the built server (node dist/main.js, role all, LOG_LEVEL=warn,
 * webhooks to 127.0.0.1 allowed) as its own process, like in production. BENCH_NODE_ARGS: extra
 * options for the server's node (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"); BENCH_PG_FLAGS: extra
 * postgres flags (e.g. "-c log_min_duration_statement=100"); BENCH_PG_LOG: a file for its log;
 * BENCH_PG_STATEMENTS=N: pg_stat_statements loaded, and its N statements of the most execution
 * time printed when the bench stops (the database's time by statement, planning time and the
 * share of blocks read from outside shared buffers), then the largest tables' sizes.
 */
export async function startBenchServer(name: string, options: { postgresFlags?: string[] } = {}): Promise<BenchServer> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), `tidings-bench-${name}-`));
  let db: EmbeddedDatabase | undefined;
  let server: ChildProcess | undefined;
  const statements = Number(process.env.BENCH_PG_STATEMENTS ?? 0);
  const stop = async () => {
    if (statements > 0 && db) await printStatements(db.urlFor("postgres"), statements).catch((err) => console.error(err));
    if (server && server.exitCode === null) {
      server.kill("SIGTERM");
      await new Promise((r) => server!.once("exit", r));
    }
    await db?.stop();
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    const pgLog = process.env.BENCH_PG_LOG;
    db = await startEmbeddedPostgres({
      dataDir,
      postgresFlags: [
        ...(options.postgresFlags ?? []),
        ...(statements > 0 ? STATEMENT_FLAGS : []),
        ...(process.env.BENCH_PG_FLAGS?.split(" ").filter(Boolean) ?? []),
      ],
      onLog: (line) => {
        if (pgLog) appendFileSync(pgLog, `${line}\n`);
      },
    });
    const dbUrl = db.urlFor("postgres");
    await migrate(dbUrl);
    if (statements > 0) await sqlOnce(dbUrl, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    const port = await freePort();
    const nodeArgs = process.env.BENCH_NODE_ARGS?.split(" ").filter(Boolean) ?? [];
    server = spawn(process.execPath, [...nodeArgs, path.join(here, "..", "dist", "main.js")], {
      env: {
        ...process.env,
        DATABASE_URL: dbUrl,
        TIDINGS_PRINT_KEYS: "true",
        PORT: String(port),
        LOG_LEVEL: "warn",
        TIDINGS_DATA_DIR: dataDir,
        TIDINGS_ROOT_KEY: ROOT_KEY,
        TIDINGS_SECRET_KEY: "bench-secret-key-0123456789abcdef0123456789",
        TIDINGS_WEBHOOK_ALLOWED_HOSTS: "127.0.0.1",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    // With DATABASE_URL the default workspace's keys are printed once (never saved to a file), to a pipe only with TIDINGS_PRINT_KEYS.
    const [, workspaceId, writeKey, adminKey] = await waitForLine(
      server,
      /Created workspace "default" \(([0-9a-f-]{36})\)[\s\S]*?write key:\s+(\S+)[\s\S]*?admin API key:\s+(\S+)[\s\S]*?listening on /,
    );
    const base = `http://127.0.0.1:${port}`;
    const admin = async (method: string, p: string, body?: unknown) => {
      const res = await fetch(base + p, {
        method,
        headers: { authorization: `Bearer ${adminKey}`, ...(body ? { "content-type": "application/json" } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await res.text();
      if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${text}`);
      return text ? JSON.parse(text) : null;
    };
    const postmaster = Number(readFileSync(path.join(dataDir, "pg", "postmaster.pid"), "utf8").split("\n")[0]);
    const serverPid = server.pid!;
    const cpu = () => ({ server: procCpu(serverPid, true).seconds, postgres: postgresCpu(postmaster) });
    return { dbUrl, base, workspaceId: workspaceId!, adminKey: adminKey!, writeKey: writeKey!, admin, cpu, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Requests received on one path: how many, and when the first and the last arrived (performance.now()). */
export interface PathCount {
  count: number;
  first: number;
  last: number;
}

/**
 * The receiver: counts requests (in all and per path), remembers webhook-ids to count repeats,
 * answers 200 at once — after `slowMs` on paths starting with /slow.
 */
export function startReceiver(slowMs = 1000) {
  const state = { count: 0, first: 0, last: 0, ids: new Set<string>(), duplicates: 0 };
  const paths = new Map<string, PathCount>();
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const id = String(req.headers["webhook-id"]);
      if (state.ids.has(id)) state.duplicates++;
      else state.ids.add(id);
      const now = performance.now();
      if (state.count === 0) state.first = now;
      state.count++;
      state.last = now;
      const p = (req.url ?? "/").split("?")[0]!;
      const c = paths.get(p);
      if (c) {
        c.count++;
        c.last = now;
      } else paths.set(p, { count: 1, first: now, last: now });
      if (req.url?.startsWith("/slow")) setTimeout(() => res.writeHead(200).end(), slowMs);
      else res.writeHead(200).end();
    });
  });
  return {
    state,
    /** Counts per path (e.g. "/hook"); zeros for a path not reached yet. */
    path: (p: string): PathCount => paths.get(p) ?? { count: 0, first: 0, last: 0 },
    reset() {
      Object.assign(state, { count: 0, first: 0, last: 0, duplicates: 0 });
      state.ids.clear();
      paths.clear();
    },
    listen: () =>
      new Promise<string>((r) => server.listen(0, "127.0.0.1", () => r(`http://127.0.0.1:${(server.address() as AddressInfo).port}`))),
    close: () => new Promise((r) => server.close(r)),
  };
}

/**
 * The baseline: `n` Standard Webhooks-signed requests like the server's (same body size, same
 * headers) to `${url}/hook` from a plain undici loop, 32 in flight, keep-alive. Returns requests/s.
 */
export async function bareLoop(url: string, n: number): Promise<number> {
  const agent = new Agent({ connections: 64, pipelining: 1 });
  const key = Buffer.from(SIGNING_SECRET);
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    for (let i = next++; i < n; i = next++) {
      const id = randomUUID();
      const body = `{"user":"member-${i}","plan":"pro"}`;
      const ts = Math.floor(Date.now() / 1000);
      const signature = createHmac("sha256", key).update(`${id}.${ts}.${body}`).digest("base64");
      const res = await request(`${url}/hook`, {
        method: "POST",
        dispatcher: agent,
        headers: {
          "content-type": "application/json",
          "webhook-id": id,
          "webhook-timestamp": String(ts),
          "webhook-signature": `v1,${signature}`,
          "user-agent": "bench",
        },
        body,
      });
      await res.body.dump();
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
  const rate = n / ((performance.now() - started) / 1000);
  await agent.close();
  return rate;
}

/**
 * Delivery policies that are configured but never bind at a bench's volumes: three frequency caps
 * (a user gets a handful of messages in a run) and a send window open all day. The delivery
 * benches put them on their workspace when BENCH_POLICIES=1 (every claim then passes the gate).
 */
export const NON_BINDING_POLICIES = {
  frequencyCaps: [
    { name: "hundred a day", limit: 100, window: { days: 1 } },
    { name: "fifty an hour", limit: 50, window: { seconds: 3600 }, channel: "Webhook" },
    { name: "promos", limit: 20, window: { days: 7 }, category: "promo" },
  ],
  sendWindows: [{ name: "all day", from: "00:00", to: "24:00" }],
};

/**
 * Puts NON_BINDING_POLICIES on the bench's workspace when BENCH_POLICIES=1. Returns what the run
 * has, for its summary, and the send path's target against the bare loop: 0.8 without policies,
 * 0.75 with them.
 */
export async function policiesFromEnv(server: BenchServer): Promise<{ label: string; target: number }> {
  if (process.env.BENCH_POLICIES !== "1") return { label: "no delivery policies", target: 0.8 };
  await server.admin("PUT", "/api/admin/policies", NON_BINDING_POLICIES);
  return { label: "delivery policies configured, none binding: BENCH_POLICIES=1", target: 0.75 };
}

/** One line of a benchmark's summary: name, value, target, PASS/FAIL. */
/** The middle value (the upper one of an even count); `xs` is not reordered. */
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export function summaryLine(name: string, value: string, target: string, ok: boolean, width = 44) {
  console.log(`${name.padEnd(width)} ${value.padStart(12)}   target ${target.padEnd(10)} ${ok ? "PASS" : "FAIL"}`);
}

async function sqlOnce(url: string, text: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(text);
  } finally {
    await client.end();
  }
}

/**
 * The `n` statements that took the most execution time, with calls, rows, time per call and the
 * share of their blocks read from outside shared buffers; then the largest relations.
 */
async function printStatements(url: string, n: number) {
  const { rows } = await sqlOnce(
    url,
    `SELECT calls, rows, round(total_exec_time)::int AS total_ms, round(total_plan_time)::int AS plan_ms, round((total_exec_time / calls)::numeric, 2)::float8 AS ms_per_call,
       round(100.0 * shared_blks_read / greatest(shared_blks_hit + shared_blks_read, 1))::int AS read_pct,
       regexp_replace(query, '\\s+', ' ', 'g') AS query
     FROM pg_stat_statements WHERE calls > 0 ORDER BY total_exec_time DESC LIMIT ${Math.floor(n)}`,
  );
  console.log(`\n=== the database's time by statement (pg_stat_statements, top ${n}; read: blocks from outside shared buffers) ===`);
  for (const r of rows) {
    console.log(
      `${String(r.total_ms).padStart(8)} ms (+${String(r.plan_ms).padStart(6)} ms planning) ${String(r.calls).padStart(8)} calls ${String(r.ms_per_call).padStart(9)} ms/call ${String(r.rows).padStart(9)} rows ${String(r.read_pct).padStart(3)} % read  ${r.query.slice(0, 150)}`,
    );
  }
  const { rows: sizes } = await sqlOnce(
    url,
    `SELECT c.relname AS name, pg_size_pretty(pg_table_size(c.oid)) AS heap, pg_size_pretty(pg_indexes_size(c.oid)) AS indexes
     FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
     WHERE c.relkind = 'r' AND ns.nspname = 'public' ORDER BY pg_total_relation_size(c.oid) DESC LIMIT 6`,
  );
  console.log(`largest tables (heap with TOAST, indexes): ${sizes.map((r) => `${r.name} ${r.heap} + ${r.indexes}`).join("; ")}`);
}
