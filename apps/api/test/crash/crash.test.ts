// Durability of acknowledged events: a real server process with its embedded PostgreSQL (fsync
// on) is SIGKILLed, process group and all, in the middle of concurrent ingestion. After a restart
// on the same data directory every batch that got a 204 must be there, each event exactly once.
// Then a SIGTERM must shut the server down cleanly (exit code 0).
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/db/embedded.ts";

const API_DIR = fileURLToPath(new URL("../..", import.meta.url));
const LOOPS = 8;
const BATCH = 20;
const INGEST_MS = 2_000;

interface Server {
  child: ChildProcess;
  url: string;
  output: () => string;
  exited: Promise<[number | null, NodeJS.Signals | null]>;
}

const started: ChildProcess[] = [];
let dataDir: string | null = null;

/** The environment of the server under test: ours minus anything that points it elsewhere. */
function serverEnv(dir: string, port: number): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith("TIDINGS_") && k !== "DATABASE_URL" && k !== "PORT" && k !== "HOST") env[k] = v;
  }
  return { ...env, TIDINGS_DATA_DIR: dir, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "warn" };
}

async function startServer(dir: string): Promise<Server> {
  const port = await freePort();
  // Its own process group, so one kill reaches the server and the PostgreSQL it spawned.
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    cwd: API_DIR,
    env: serverEnv(dir, port),
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  started.push(child);
  let log = "";
  child.stdout!.on("data", (d) => (log += d));
  child.stderr!.on("data", (d) => (log += d));
  const exited = once(child, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 40_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`server exited during start:\n${log}`);
    if (Date.now() > deadline) throw new Error(`server not ready after 40 s:\n${log}`);
    const ready = await fetch(`${url}/health/ready`).then((r) => r.ok, () => false);
    if (ready) return { child, url, output: () => log, exited };
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** True while any process of the group is alive. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitGroupGone(pgid: number) {
  const deadline = Date.now() + 10_000;
  while (groupAlive(pgid)) {
    if (Date.now() > deadline) throw new Error(`process group ${pgid} still alive`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One client: sends 20-event batches until told to stop or the server goes away. */
async function ingestLoop(server: Server, writeKey: string, loop: number, stop: { now: boolean }, acked: string[], refused: string[]) {
  const auth = `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}`;
  for (let n = 0; !stop.now; n++) {
    const ids = Array.from({ length: BATCH }, (_, i) => `crash-${loop}-${n}-${i}`);
    const batch = ids.map((messageId, i) => ({ type: "track", userId: `u-${loop}`, event: "Crash Test", messageId, properties: { n, i } }));
    try {
      const res = await fetch(`${server.url}/v1/batch`, {
        method: "POST",
        headers: { authorization: auth, "content-type": "application/json" },
        body: JSON.stringify({ batch }),
      });
      await res.arrayBuffer();
      if (res.status === 204) acked.push(...ids);
      // 503 + Retry-After is the server shedding load on a busy machine: a valid answer.
      else if (res.status !== 503) refused.push(`${res.status}`);
    } catch {
      return; // the server is gone
    }
  }
}

async function allMessageIds(server: Server, adminKey: string): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const qs: URLSearchParams = new URLSearchParams({ limit: "500", event: "Crash Test", ...(cursor ? { cursor } : {}) });
    const res: Response = await fetch(`${server.url}/api/admin/events?${qs}`, { headers: { authorization: `Bearer ${adminKey}` } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { items: { messageId: string }[]; nextCursor: string | null };
    ids.push(...body.items.map((e) => e.messageId));
    cursor = body.nextCursor;
  } while (cursor);
  return ids;
}

afterAll(async () => {
  for (const child of started) if (child.pid && groupAlive(child.pid)) process.kill(-child.pid, "SIGKILL");
  for (const child of started) if (child.pid) await waitGroupGone(child.pid).catch(() => {});
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe("crash safety", () => {
  it("keeps every acknowledged event across a SIGKILL of the whole server, then shuts down cleanly", { timeout: 60_000 }, async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), "tidings-crash-"));
    const first = await startServer(dataDir);
    const creds = JSON.parse(await readFile(path.join(dataDir, "credentials.json"), "utf8")) as { writeKey: string; adminApiKey: string };

    const acked: string[] = [];
    const refused: string[] = [];
    const stop = { now: false };
    const loops = Array.from({ length: LOOPS }, (_, i) => ingestLoop(first, creds.writeKey, i, stop, acked, refused));
    await new Promise((r) => setTimeout(r, INGEST_MS));
    const pgid = first.child.pid!;
    process.kill(-pgid, "SIGKILL");
    stop.now = true;
    await Promise.all(loops);
    const [, signal] = await first.exited;
    expect(signal).toBe("SIGKILL");
    await waitGroupGone(pgid);
    expect(refused).toEqual([]);
    expect(acked.length).toBeGreaterThanOrEqual(BATCH * LOOPS);

    const second = await startServer(dataDir);
    const stored = await allMessageIds(second, creds.adminApiKey);
    const counts = new Map<string, number>();
    for (const id of stored) counts.set(id, (counts.get(id) ?? 0) + 1);
    const missing = acked.filter((id) => !counts.has(id));
    const duplicated = [...counts].filter(([, n]) => n > 1).map(([id]) => id);
    expect(missing, `${missing.length} of ${acked.length} acknowledged events lost`).toEqual([]);
    expect(duplicated).toEqual([]);
    // Unacknowledged batches may or may not have landed, but never partially: a batch is one commit.
    const perBatch = new Map<string, number>();
    for (const id of stored) {
      const batchKey = id.replace(/-\d+$/, "");
      perBatch.set(batchKey, (perBatch.get(batchKey) ?? 0) + 1);
    }
    for (const [batchKey, n] of perBatch) expect(n, batchKey).toBe(BATCH);

    // Graceful shutdown: SIGTERM to the server alone; it stops its PostgreSQL itself.
    process.kill(second.child.pid!, "SIGTERM");
    const [code] = await second.exited;
    expect(code, second.output()).toBe(0);
    await waitGroupGone(second.child.pid!);
  });
});
