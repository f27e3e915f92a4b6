// Throughput of `tidings events import` into a local server: the built CLI binary imports a
// 100 000-line NDJSON file (10 % identify, 90 % track, no messageIds: the CLI derives them) into a
// fresh server started from apps/api/dist, and prints events/s (target ≥ 20 000).
//   pnpm build && pnpm --filter @tidings/cli bench:import
//   (or, in packages/cli: node --import tsx bench/import.ts)
// After a warm-up import (JIT, connection pool), the file is imported BENCH_RUNS times (default 3),
// each run under its own --import-id so every run stores 100 000 new events; the median counts.
// A last run repeats an import id: every event is a replay, stored once.
// BENCH_LINES changes the file's size, BENCH_CONCURRENCY the requests in flight. The server, its
// PostgreSQL and the CLI share the machine's cores, and on a shared machine other work competes
// with them; so each run also reports the CPU time the three used (Linux /proc), and the rate
// that CPU budget allows on this machine's cores when nothing else runs.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startServer } from "../test/support/server.js";

const LINES = Number(process.env.BENCH_LINES ?? 100_000);
const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 3));
const TARGET = 20_000;
const bin = fileURLToPath(new URL("../dist/bin.js", import.meta.url));

function writeFile(file: string, lines: number) {
  const out: string[] = [];
  for (let i = 0; i < lines; i++) {
    const userId = `user-${i % 5000}`;
    out.push(
      JSON.stringify(
        i % 10 === 0
          ? { type: "identify", userId, traits: { email: `${userId}@example.com`, plan: i % 3 ? "free" : "pro" } }
          : {
              type: "track",
              userId,
              event: "Item Viewed",
              properties: { sku: `sku-${i % 977}`, price: i % 100, currency: "EUR" },
              context: { ip: "10.0.0.1", library: { name: "bench", version: "1" } },
            },
      ),
    );
  }
  writeFileSync(file, `${out.join("\n")}\n`);
}

const TICK = 100; // USER_HZ: /proc times are in 1/100 s on Linux

/** CPU seconds (user + system) used so far by `pid` and every process below it; 0 without /proc. */
function treeCpuSeconds(pid: number): number {
  if (!existsSync("/proc/self/stat")) return 0;
  const stats = new Map<number, { ppid: number; ticks: number }>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const text = readFileSync(`/proc/${entry}/stat`, "utf8");
      const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
      stats.set(Number(entry), { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) });
    } catch {
      // the process ended meanwhile
    }
  }
  let ticks = 0;
  const todo = [pid];
  while (todo.length) {
    const p = todo.pop()!;
    ticks += stats.get(p)?.ticks ?? 0;
    for (const [child, s] of stats) if (s.ppid === p) todo.push(child);
  }
  return ticks / TICK;
}

/** CPU seconds used by this process's finished children (the CLI runs). */
function childrenCpuSeconds(): number {
  if (!existsSync("/proc/self/stat")) return 0;
  const text = readFileSync("/proc/self/stat", "utf8");
  const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return (Number(f[13]) + Number(f[14])) / TICK;
}

interface Summary {
  accepted: number;
  rejected: number;
  seconds: number;
  eventsPerSecond: number;
}

function importOnce(file: string, importId: string, env: Record<string, string>): Promise<Summary> {
  const args = [bin, "events", "import", file, "--json", "--import-id", importId];
  if (process.env.BENCH_CONCURRENCY) args.push("--concurrency", process.env.BENCH_CONCURRENCY);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      env: { PATH: process.env.PATH ?? "", HOME: os.tmpdir(), ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("close", (code) => (code === 0 ? resolve(JSON.parse(out) as Summary) : reject(new Error(`import exited ${code}:\n${err}`))));
  });
}

const dir = mkdtempSync(path.join(os.tmpdir(), "tidings-bench-import-"));
const file = path.join(dir, "events.ndjson");
const warmup = path.join(dir, "warmup.ndjson");
writeFile(file, LINES);
writeFile(warmup, Math.min(LINES, 20_000));
console.log(`bench:import — ${LINES} NDJSON lines; starting a server…`);
const server = await startServer();
try {
  const env = { TIDINGS_HOST: server.host, TIDINGS_WRITE_KEY: server.writeKey, XDG_CONFIG_HOME: dir };
  await importOnce(warmup, "warmup", env);
  const rates: number[] = [];
  const cores = os.availableParallelism();
  for (let run = 1; run <= RUNS; run++) {
    const [serverBefore, cliBefore] = [treeCpuSeconds(server.pid), childrenCpuSeconds()];
    const result = await importOnce(file, `run-${run}`, env);
    if (result.accepted !== LINES) throw new Error(`run ${run}: only ${result.accepted} of ${LINES} events accepted`);
    rates.push(result.eventsPerSecond);
    const serverCpu = treeCpuSeconds(server.pid) - serverBefore;
    const cliCpu = childrenCpuSeconds() - cliBefore;
    const budget =
      serverCpu + cliCpu > 0
        ? ` — CPU: server+PostgreSQL ${serverCpu.toFixed(2)} s, CLI ${cliCpu.toFixed(2)} s; alone on ${cores} cores ≈ ${Math.round(LINES / ((serverCpu + cliCpu) / cores))} events/s`
        : "";
    console.log(`  run ${run}: ${result.eventsPerSecond} events/s (${result.seconds.toFixed(2)} s)${budget}`);
  }
  const median = [...rates].sort((a, b) => a - b)[Math.floor(rates.length / 2)]!;
  console.log(`events import: ${median} events/s median of ${RUNS} (target ≥ ${TARGET}: ${median >= TARGET ? "ok" : "BELOW TARGET"})`);
  const replay = await importOnce(file, "run-1", env);
  console.log(`re-run of an imported file (every event a replay, stored once): ${replay.eventsPerSecond} events/s`);
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
