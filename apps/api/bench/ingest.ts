// pnpm bench:ingest — measures, on one (embedded, durable) PostgreSQL:
//  1. durable events/s through POST /batch (100-event batches, 10% identify, unique messageIds)
//     divided by the events/s of a bare `pg` unnest-insert loop into an identical events table
//     (plain INSERT, the cheapest there is; target ≥ 0.6);
//  2. single identify requests/s divided by a bare Fastify server's (target ≥ 0.25), with p99:
//     both servers are measured in alternating rounds and the medians compared, so a change in
//     the machine's speed during the run (shared vCPUs drift by ±30 %) hits both alike;
//  3. what the background work costs ingestion: identify requests/s and batch events/s of the
//     server with its workers running (TIDINGS_ROLE=all) and no segment defined, over the same
//     of a TIDINGS_ROLE=api server on the same database (target ≥ 0.9 each: a commit nothing
//     depends on adds no work);
//  4. wake-ups with two api processes: a segment on `plan` defined (so every identify commit
//     writes an outbox row), identify load through the role=all and the role=api server at once
//     (wrk -c16 each); the NOTIFYs the engine is sent are counted on a LISTEN connection.
//     Ingestion notifies only when the workspace's outbox was empty (src/outbox), so they are far
//     fewer than the commits: commits that notify are serialized by PostgreSQL;
//  5. the server's peak RSS.
// The server runs as its own process (node dist/main.js), like in production. Identify load comes
// from `wrk -t1` when it is installed (apt-get install wrk; much lighter than a JS generator),
// else from autocannon; batch load from autocannon with pre-built bodies. Load generator, server
// and PostgreSQL share the machine's cores, so compare the ratios, not absolutes.
import { execFile, spawn, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import autocannon from "autocannon";
import pg from "pg";
import { startEmbeddedPostgres, freePort } from "../src/db/embedded.ts";
import { migrate } from "../src/db/migrate.ts";
import { waitForLine } from "./support.ts";

const here = path.dirname(fileURLToPath(import.meta.url));
const DURATION = Number(process.env.BENCH_SECONDS ?? 10);
/** Identify load sent to each server before it is measured (JIT, caches, first profile rows). */
const WARMUP = Number(process.env.BENCH_WARMUP_SECONDS ?? 15);
/** Alternating identify rounds per server (Tidings, bare, Tidings, bare, …). */
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const BATCH = 100;

function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(status.match(/VmHWM:\s+(\d+)/)?.[1] ?? 0);
  return Math.round(kb / 1024);
}

const runId = randomUUID().slice(0, 8);
let seq = 0;
function batchBody(): string {
  const batch = [];
  for (let i = 0; i < BATCH; i++) {
    const n = seq++;
    const userId = `user-${n % 50_000}`;
    batch.push(
      i % 10 === 0
        ? {
            type: "identify",
            userId,
            messageId: `${runId}-${n}`,
            traits: { email: `${userId}@example.com`, plan: n % 3 ? "free" : "pro", seen: n },
          }
        : {
            type: "track",
            userId,
            messageId: `${runId}-${n}`,
            event: "Item Viewed",
            properties: { sku: `sku-${n % 977}`, price: n % 100, currency: "EUR" },
            context: { ip: "10.0.0.1", library: { name: "bench", version: "1" } },
          },
    );
  }
  return JSON.stringify({ batch, sentAt: new Date().toISOString() });
}

interface BenchEvent {
  type: string;
  userId: string;
  messageId: string;
  event?: string;
}

/** Rows of the same shape the server stores, for the bare insert loop. */
function rowsFor(body: string) {
  const { batch } = JSON.parse(body) as { batch: BenchEvent[] };
  return batch.map((ev) => ({ ...ev, payload: JSON.stringify(ev) }));
}

async function bareInsertLoop(url: string, workspaceId: string, bodies: string[]): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query("CREATE TABLE bench_events (LIKE events INCLUDING ALL)");
  const now = new Date();
  const started = performance.now();
  let rows = 0;
  for (const body of bodies) {
    const evs = rowsFor(body).map((e) => ({ ...e, messageId: `bare-${e.messageId}` }));
    await client.query(
      `INSERT INTO bench_events (workspace_id, message_id, type, identity_id, user_id, anonymous_id, event, event_time, received_at, payload)
       SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::timestamptz[], $9::timestamptz[], $10::jsonb[])`,
      [
        evs.map(() => workspaceId),
        evs.map((e) => e.messageId),
        evs.map((e) => e.type),
        evs.map((e) => e.userId),
        evs.map((e) => e.userId),
        evs.map(() => null),
        evs.map((e) => e.event ?? null),
        evs.map(() => now),
        evs.map(() => now),
        evs.map((e) => e.payload),
      ],
    );
    rows += evs.length;
    if (performance.now() - started > DURATION * 1000) break;
  }
  const perSecond = rows / ((performance.now() - started) / 1000);
  await client.query("DROP TABLE bench_events");
  await client.end();
  return perSecond;
}

async function load(opts: autocannon.Options) {
  const result = await autocannon({ duration: DURATION, ...opts });
  return result;
}

const IDENTIFY_CONNECTIONS = 32;
const hasWrk = spawnSync("wrk", ["--version"]).error === undefined;

/** Single identify requests with unique messageIds: requests/s and p99 latency (ms). */
async function identifyLoad(
  url: string,
  headers: Record<string, string>,
  dir: string,
  seconds = DURATION,
  connections = IDENTIFY_CONNECTIONS,
): Promise<{ rps: number; p99: number; errors: number }> {
  if (hasWrk) {
    const script = path.join(dir, `identify-${randomUUID().slice(0, 8)}.lua`);
    writeFileSync(
      script,
      [
        "local n = 0",
        `local run = "${randomUUID().slice(0, 8)}"`,
        'wrk.method = "POST"',
        "request = function()",
        "  n = n + 1",
        `  local body = string.format('{"userId":"u-%d","messageId":"%s-%d","traits":{"plan":"pro","n":%d}}', n % 10000, run, n, n)`,
        "  return wrk.format(nil, nil, nil, body)",
        "end",
      ].join("\n"),
    );
    const args = ["-t1", `-c${connections}`, `-d${seconds}s`, "--latency", "-s", script];
    for (const [k, v] of Object.entries(headers)) args.push("-H", `${k}: ${v}`);
    // Asynchronously: this process must keep draining the server's and PostgreSQL's output pipes.
    const { stdout: out } = await promisify(execFile)("wrk", [...args, `${url}/api/public/apps/identify`], { encoding: "utf8" });
    const rps = Number(out.match(/Requests\/sec:\s+([\d.]+)/)?.[1]);
    const m = out.match(/99%\s+([\d.]+)(us|ms|s)/);
    const p99 = m ? Number(m[1]) * ({ us: 0.001, ms: 1, s: 1000 } as Record<string, number>)[m[2]!]! : Number.NaN;
    const errors = Number(out.match(/Non-2xx or 3xx responses:\s+(\d+)/)?.[1] ?? 0);
    return { rps, p99, errors };
  }
  // Unique per run, so a warm-up's messageIds are not replayed as cheap duplicates.
  const run = randomUUID().slice(0, 8);
  let n = 0;
  const identify = () => JSON.stringify({ userId: `u-${n % 10_000}`, messageId: `${runId}-id-${run}-${n++}`, traits: { plan: "pro", n } });
  const r = await load({
    url,
    duration: seconds,
    connections,
    requests: [{ method: "POST", path: "/api/public/apps/identify", headers, setupRequest: (req) => ({ ...req, body: identify() }) }],
  });
  return { rps: r.requests.average, p99: r.latency.p99, errors: r.non2xx };
}

async function main() {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "tidings-bench-"));
  const db = await startEmbeddedPostgres({ dataDir });
  const url = db.urlFor("postgres");
  await migrate(url);
  const port = await freePort();
  const tidings = (port: number, role: "all" | "api") =>
    spawn(process.execPath, [path.join(here, "..", "dist", "main.js")], {
      env: {
        ...process.env,
        DATABASE_URL: url,
        TIDINGS_PRINT_KEYS: "true",
        PORT: String(port),
        LOG_LEVEL: "warn",
        TIDINGS_ROLE: role,
        TIDINGS_DATA_DIR: dataDir,
        TIDINGS_ROOT_KEY: "bench-root-key-0123456789abcdef",
        TIDINGS_SECRET_KEY: "bench-secret-key-0123456789abcdef0123456789",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
  const server = tidings(port, "all");
  const apiPort = await freePort();
  let apiOnly: ReturnType<typeof tidings> | undefined;
  const bare = spawn(process.execPath, ["--import", "tsx", path.join(here, "bare-fastify.ts")], { stdio: ["ignore", "pipe", "pipe"] });
  try {
    // With DATABASE_URL the default workspace's keys are printed once (never saved to a file), to a pipe only with TIDINGS_PRINT_KEYS.
    const [, workspaceId, writeKey, adminKey] = await waitForLine(
      server,
      /Created workspace "default" \(([0-9a-f-]{36})\)[\s\S]*?write key:\s+(\S+)[\s\S]*?admin API key:\s+(\S+)[\s\S]*?listening on /,
    );
    const creds = { workspaceId: workspaceId!, writeKey: writeKey! };
    // The same database with no background work: the workspace exists, so it prints no keys.
    apiOnly = tidings(apiPort, "api");
    await waitForLine(apiOnly, /listening on /);
    const apiBase = `http://127.0.0.1:${apiPort}`;
    const bareUrl = (await waitForLine(bare, /(http:\/\/\S+)/))[1]!;
    const base = `http://127.0.0.1:${port}`;
    const auth = { authorization: `Basic ${creds.writeKey}`, "content-type": "application/json" };

    // 1. Single identify requests, unique messageIds; the same load against bare Fastify. Each
    //    server gets the same warm-up first (steady state is measured, not JIT compilation), then
    //    the two are measured in alternating rounds.
    const bareHeaders = { "content-type": "application/json" };
    if (WARMUP > 0) {
      await identifyLoad(base, auth, dataDir, WARMUP);
      await identifyLoad(apiBase, auth, dataDir, WARMUP);
      await identifyLoad(bareUrl, bareHeaders, dataDir, WARMUP);
    }
    type Load = Awaited<ReturnType<typeof identifyLoad>>;
    const rounds: { id: Load; api: Load; bare: Load }[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      rounds.push({
        id: await identifyLoad(base, auth, dataDir),
        api: await identifyLoad(apiBase, auth, dataDir),
        bare: await identifyLoad(bareUrl, bareHeaders, dataDir),
      });
    }
    const median = (xs: number[]) => {
      const s = [...xs].sort((a, b) => a - b);
      return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
    };
    const id = {
      rps: median(rounds.map((r) => r.id.rps)),
      p99: median(rounds.map((r) => r.id.p99)),
      errors: rounds.reduce((n, r) => n + r.id.errors, 0),
    };
    const bareId = { rps: median(rounds.map((r) => r.bare.rps)), p99: median(rounds.map((r) => r.bare.p99)) };
    const apiId = { rps: median(rounds.map((r) => r.api.rps)), p99: median(rounds.map((r) => r.api.p99)) };
    // 2. Batches. Bodies are built before the clock starts so the load generator stays light.
    const bodies = Array.from({ length: Math.ceil((2 * ROUNDS * DURATION * 60_000) / BATCH) }, batchBody);
    let next = 0;
    const batchLoad = (target: string) =>
      load({
        url: target,
        connections: 16,
        requests: [
          {
            method: "POST",
            path: "/api/public/apps/batch",
            headers: auth,
            setupRequest: (req) => ({ ...req, body: bodies[next++ % bodies.length] }),
          },
        ],
      });
    // Alternating rounds, as for identify: role=api, role=all, …; the medians are compared.
    const batchRounds: { api: Awaited<ReturnType<typeof batchLoad>>; all: Awaited<ReturnType<typeof batchLoad>> }[] = [];
    for (let i = 0; i < ROUNDS; i++) batchRounds.push({ api: await batchLoad(apiBase), all: await batchLoad(base) });
    const medianRun = (runs: Awaited<ReturnType<typeof batchLoad>>[]) =>
      [...runs].sort((a, b) => a["2xx"] - b["2xx"])[(runs.length - 1) >> 1]!;
    const batchRun = medianRun(batchRounds.map((r) => r.all));
    const apiBatchRun = medianRun(batchRounds.map((r) => r.api));
    if (next > bodies.length) throw new Error("ran out of unique batch bodies; raise the pre-built count");
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    const stored = Number(
      (
        await admin.query("SELECT count(*)::int AS n FROM events WHERE message_id LIKE $1 AND message_id NOT LIKE $2", [
          `${runId}-%`,
          `${runId}-id-%`,
        ])
      ).rows[0].n,
    );
    const acked = batchRounds.reduce((n, r) => n + r.api["2xx"] + r.all["2xx"], 0) * BATCH;
    const serverEventsPerSec = (batchRun["2xx"] * BATCH) / DURATION;
    const apiEventsPerSec = (apiBatchRun["2xx"] * BATCH) / DURATION;
    const bareEventsPerSec = await bareInsertLoop(url, creds.workspaceId, bodies.slice(0, Math.min(bodies.length, 4000)));

    // 4. Wake-ups with two api processes and a segment every identify commit concerns.
    const saved = await fetch(`${base}/api/admin/segments`, {
      method: "PUT",
      headers: { authorization: `Bearer ${adminKey}`, "content-type": "application/json" },
      body: JSON.stringify({
        name: "bench-pro",
        definition: { entryNode: { type: "Trait", id: "pro", path: "plan", operator: { type: "Equals", value: "pro" } }, nodes: [] },
      }),
    });
    if (!saved.ok) throw new Error(`segment: ${saved.status} ${await saved.text()}`);
    const listener = new pg.Client({ connectionString: url });
    await listener.connect();
    let notifications = 0;
    listener.on("notification", () => notifications++);
    await listener.query("LISTEN tidings_segment_changes");
    const [both1, both2] = await Promise.all([
      identifyLoad(base, auth, dataDir, DURATION, 16),
      identifyLoad(apiBase, auth, dataDir, DURATION, 16),
    ]);
    await listener.end();
    const twoApi = { rps: both1.rps + both2.rps, commits: (both1.rps + both2.rps) * DURATION, p99: Math.max(both1.p99, both2.p99) };

    const rss = peakRssMb(server.pid!);
    await admin.end();

    const r = (x: number) => Math.round(x).toLocaleString("en-US");
    const batchRatio = serverEventsPerSec / bareEventsPerSec;
    const idRatio = id.rps / bareId.rps;
    console.log(
      "\nTidings ingestion benchmark (one embedded PostgreSQL, fsync on, server LOG_LEVEL=warn, %d s per run after %d s identify warm-up, %d cores)",
      DURATION,
      WARMUP,
      os.cpus().length,
    );
    for (const [i, round] of rounds.entries()) {
      console.log(
        `identify round ${i + 1}: ${r(round.id.rps)} req/s (p99 ${round.id.p99.toFixed(1)} ms), role=api ${r(round.api.rps)} req/s, bare ${r(round.bare.rps)} req/s → ${(round.id.rps / round.bare.rps).toFixed(2)} of bare`,
      );
    }
    console.log(
      `batch:    ${r(serverEventsPerSec)} durable events/s via /batch (${batchRun["2xx"]} × ${BATCH}-event batches acked, ${batchRun.non2xx} non-2xx, median of ${ROUNDS} rounds; ${stored} batch rows stored in all rounds)`,
    );
    console.log(`          ${r(bareEventsPerSec)} events/s bare pg unnest-insert loop (${BATCH}-row statements, 1 connection)`);
    console.log(`          ratio ${batchRatio.toFixed(2)} (target ≥ 0.60) ${batchRatio >= 0.6 ? "PASS" : "FAIL"}`);
    console.log(
      `identify: ${r(id.rps)} req/s Tidings (p99 ${id.p99.toFixed(1)} ms, ${id.errors} non-2xx) vs ${r(bareId.rps)} req/s bare Fastify (p99 ${bareId.p99.toFixed(1)} ms), medians of ${ROUNDS} rounds; ${IDENTIFY_CONNECTIONS} connections, ${hasWrk ? "wrk -t1" : "autocannon (install wrk for lighter load generation)"}`,
    );
    console.log(
      `          ratio ${idRatio.toFixed(2)} (target ≥ 0.25) ${idRatio >= 0.25 ? "PASS" : "FAIL"}; p99 ${id.p99.toFixed(1)} ms (target ≤ 20) ${id.p99 <= 20 ? "PASS" : "FAIL"}`,
    );
    const idCost = id.rps / apiId.rps;
    const batchCost = serverEventsPerSec / apiEventsPerSec;
    console.log(
      `workers:  with the engine running and no segment, over TIDINGS_ROLE=api (${r(apiId.rps)} req/s, ${r(apiEventsPerSec)} events/s via /batch):`,
    );
    console.log(`          identify ${idCost.toFixed(2)} (target ≥ 0.90) ${idCost >= 0.9 ? "PASS" : "FAIL"}`);
    console.log(`          batch    ${batchCost.toFixed(2)} (target ≥ 0.90) ${batchCost >= 0.9 ? "PASS" : "FAIL"}`);
    console.log(
      `wake-ups: two api processes with a segment on plan: ${r(twoApi.rps)} identify req/s together (p99 ≤ ${twoApi.p99.toFixed(1)} ms); ${r(notifications)} NOTIFYs for ≈ ${r(twoApi.commits)} commits (${((100 * notifications) / twoApi.commits).toFixed(1)} %)`,
    );
    console.log(`memory:   server peak RSS ${rss} MB`);
    if (stored < acked) throw new Error(`acknowledged ${acked} events but only ${stored} are stored`);
  } finally {
    server.kill("SIGTERM");
    apiOnly?.kill("SIGTERM");
    bare.kill("SIGTERM");
    await new Promise((r) => server.once("exit", r));
    await db.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
