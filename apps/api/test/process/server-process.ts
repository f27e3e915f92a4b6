// A real server process for the crash and signal tests: `src/main.ts` with its embedded
// PostgreSQL in a data directory of the test's, in a process group of its own (as a terminal
// runs a foreground command), plus a batch-sending load and a way to read back what was stored.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { expect } from "vitest";

const API_DIR = fileURLToPath(new URL("../..", import.meta.url));
export const BATCH = 20;
const START_MS = 90_000;
/** How long `callApi` keeps asking while the server answers 503 + Retry-After (overloaded, starting). */
const UNAVAILABLE_MS = 30_000;

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  output: () => string;
  exited: Promise<[number | null, NodeJS.Signals | null]>;
}

const started: ChildProcess[] = [];

/**
 * The environment of the server under test: ours minus anything that points it elsewhere. It
 * listens on a port the kernel gives it (PORT 0), read back from its "listening on" line: a port
 * picked here and freed for it could be given meanwhile to another test's listener, whose answers
 * then passed for this server's (seen in CI: a webhook receiver's "ok" answered its readiness).
 */
function serverEnv(dir: string, extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith("TIDINGS_") && k !== "DATABASE_URL" && k !== "PORT" && k !== "HOST") env[k] = v;
  }
  return { ...env, TIDINGS_DATA_DIR: dir, PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "warn", ...extra };
}

/** Starts the server on `dir`'s embedded PostgreSQL, or as `extraEnv` says (DATABASE_URL, TIDINGS_ROLE, …). */
export async function startServer(dir: string, extraEnv: NodeJS.ProcessEnv = {}): Promise<ServerProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    cwd: API_DIR,
    env: serverEnv(dir, extraEnv),
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  started.push(child);
  let log = "";
  child.stdout!.on("data", (d) => (log += d));
  child.stderr!.on("data", (d) => (log += d));
  const exited = once(child, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
  // Generous: several servers starting at once on a busy 2-core machine take tens of seconds.
  const deadline = Date.now() + START_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`server exited during start:\n${log}`);
    if (Date.now() > deadline) throw new Error(`server not ready after ${START_MS / 1000} s:\n${log}`);
    const url = /tidings: listening on (http:\/\/\S+)\n/.exec(log)?.[1];
    if (
      url &&
      (await fetch(`${url}/health/ready`).then(
        (r) => r.ok,
        () => false,
      ))
    )
      return { child, url, output: () => log, exited };
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * An API call with a bearer key, asked again after a 503 + Retry-After as a client would (for at
 * most 30 s: a loaded machine's event-loop guard); throws on any other status of 300 or more, naming it.
 */
export async function callApi(server: ServerProcess, key: string, method: string, p: string, body?: unknown) {
  const deadline = Date.now() + UNAVAILABLE_MS;
  for (;;) {
    const res = await fetch(server.url + p, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    if (res.status === 503 && res.headers.get("retry-after") && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      continue;
    }
    if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
  }
}

/** Every item of a paged admin list (`p` without limit or cursor), through `callApi`. */
export async function listAll(server: ServerProcess, key: string, p: string): Promise<any[]> {
  const items: any[] = [];
  let cursor: string | null = null;
  do {
    const sep = p.includes("?") ? "&" : "?";
    const page: any = await callApi(server, key, "GET", `${p}${sep}limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    items.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  return items;
}

/**
 * PUTs a template and a Running journey through `admin` (an API call with the workspace's admin
 * key): entry on `segmentId` → (a delay of `delaySeconds`) → a webhook POST to `url` whose body
 * names the user (`{"user": …}`, what a `Tally` counts) → exit. Answers the journey.
 */
export async function putWebhookJourney(
  admin: (method: string, p: string, body?: unknown) => Promise<any>,
  o: { name: string; segmentId: string; url: string; delaySeconds: number | null },
) {
  const template = await admin("PUT", "/api/admin/content/templates", {
    name: `${o.name}-hook`,
    definition: { type: "Webhook", url: o.url, method: "POST", body: '{"user":"{{ user.id }}"}' },
  });
  const send = { id: "send", type: "MessageNode", channel: "Webhook", templateId: template.id, child: "ExitNode" };
  const nodes = o.delaySeconds
    ? [{ id: "wait", type: "DelayNode", variant: { type: "Second", seconds: o.delaySeconds }, child: "send" }, send]
    : [send];
  return admin("PUT", "/api/admin/journeys", {
    name: o.name,
    status: "Running",
    definition: {
      entryNode: { type: "EntryNode", segment: o.segmentId, child: nodes[0]!.id },
      nodes,
      exitNode: { type: "ExitNode", id: "ExitNode" },
    },
  });
}

/** Polls `check` every 50 ms until it holds; throws naming `what` after `ms`. */
export async function waitUntil(check: () => Promise<boolean> | boolean, ms: number, what: string) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function readCredentials(dir: string) {
  return JSON.parse(await readFile(path.join(dir, "credentials.json"), "utf8")) as { writeKey: string; adminApiKey: string };
}

/** The pid of the PostgreSQL server running on the data directory, from its lock file. */
export function postmasterPid(dir: string): number {
  return Number(readFileSync(path.join(dir, "pg", "postmaster.pid"), "utf8").split("\n")[0]);
}

export function alive(pid: number, group = false): boolean {
  try {
    process.kill(group ? -pid : pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function waitGone(pid: number, group = false) {
  const deadline = Date.now() + 10_000;
  while (alive(pid, group)) {
    if (Date.now() > deadline) throw new Error(`${group ? "process group" : "process"} ${pid} still alive`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** SIGKILLs a server's whole process group (a crash) and waits until it is gone. */
export async function killServer(server: ServerProcess) {
  process.kill(-server.child.pid!, "SIGKILL");
  await waitGone(server.child.pid!, true);
}

/** Stops a server as an orchestrator would (SIGTERM); it must exit cleanly. */
export async function stopServer(server: ServerProcess) {
  process.kill(server.child.pid!, "SIGTERM");
  expect((await server.exited)[0], server.output()).toBe(0);
  await waitGone(server.child.pid!, true);
}

/** The lines a server logged at level error or fatal. */
export const errorsIn = (server: ServerProcess) =>
  server
    .output()
    .split("\n")
    .filter((l) => /"level":(50|60)/.test(l));

/** How many of `ids` a workspace's events table holds, read from the database itself, and which it lacks. */
export async function countStored(databaseUrl: string, workspaceId: string, ids: string[]): Promise<{ stored: number; missing: string[] }> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ message_id: string }>(
      "SELECT message_id FROM events WHERE workspace_id = $1 AND message_id = ANY($2::text[])",
      [workspaceId, ids],
    );
    const found = new Set(rows.map((r) => r.message_id));
    return { stored: rows.length, missing: ids.filter((id) => !found.has(id)) };
  } finally {
    await client.end();
  }
}

/** Kills whatever the tests started and left running. */
export async function killStarted() {
  for (const child of started) if (child.pid && alive(child.pid, true)) process.kill(-child.pid, "SIGKILL");
  for (const child of started) if (child.pid) await waitGone(child.pid, true).catch(() => {});
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const folders: string[] = [];

/** A temporary folder, removed by `cleanUp`. */
export async function tempDir(tag: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `tidings-${tag}-`));
  folders.push(dir);
  return dir;
}

/**
 * After a file's tests: kills the servers they started and left running, then closes what else
 * they started (receivers, databases; in order) and removes their temporary folders.
 */
export async function cleanUp(...close: (() => Promise<unknown> | undefined)[]) {
  await killStarted();
  for (const c of close) await c();
  for (const dir of folders.splice(0)) await rm(dir, { recursive: true, force: true });
}

export interface Load {
  /** messageIds of every batch answered 204. */
  acked: string[];
  /** When each 204 arrived (ms since epoch), in order. */
  ackedAt: number[];
  /** Batches answered 503 with Retry-After and the error envelope. */
  unavailable: number;
  /** Every answer other than 204, or 503 with Retry-After and the error envelope, as `status body`. */
  wrong: string[];
  stop(): Promise<void>;
}

const isUnavailableEnvelope = (text: string) => {
  try {
    return (JSON.parse(text) as { error?: { code?: unknown } }).error?.code === "UNAVAILABLE";
  } catch {
    return false;
  }
};

/**
 * `loops` clients sending 20-event batches until stopped or the server goes away (a refused or
 * reset connection ends a client: no answer is not a wrong answer). After a 503 a client waits
 * `pauseOn503Ms` before its next batch (a real client would wait Retry-After seconds).
 */
export function startLoad(server: Pick<ServerProcess, "url">, writeKey: string, tag: string, loops = 8, pauseOn503Ms = 0): Load {
  const auth = `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}`;
  const load: Load = { acked: [], ackedAt: [], unavailable: 0, wrong: [], stop: async () => {} };
  let stopping = false;
  const client = async (loop: number) => {
    for (let n = 0; !stopping; n++) {
      const ids = Array.from({ length: BATCH }, (_, i) => `${tag}-${loop}-${n}-${i}`);
      const batch = ids.map((messageId, i) => ({
        type: "track",
        userId: `u-${loop}`,
        event: "Load Test",
        messageId,
        properties: { n, i },
      }));
      try {
        const res = await fetch(`${server.url}/v1/batch`, {
          method: "POST",
          headers: { authorization: auth, "content-type": "application/json" },
          body: JSON.stringify({ batch }),
        });
        const text = await res.text();
        if (res.status === 204) {
          load.acked.push(...ids);
          load.ackedAt.push(Date.now());
        }
        // 503 + Retry-After is the server shedding load, closing or without its database: a valid answer.
        else if (res.status === 503 && res.headers.get("retry-after") && isUnavailableEnvelope(text)) {
          load.unavailable++;
          if (pauseOn503Ms > 0) await new Promise((r) => setTimeout(r, pauseOn503Ms));
        } else load.wrong.push(`${res.status} ${res.headers.get("retry-after") ?? "-"} ${text}`);
      } catch {
        return; // the server is gone
      }
    }
  };
  const clients = Array.from({ length: loops }, (_, i) => client(i));
  load.stop = async () => {
    stopping = true;
    await Promise.all(clients);
  };
  return load;
}

/** Every stored "Load Test" event's messageId, read through the admin API. */
export async function storedMessageIds(server: ServerProcess, adminKey: string): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const qs: URLSearchParams = new URLSearchParams({ limit: "500", event: "Load Test", ...(cursor ? { cursor } : {}) });
    const res: Response = await fetch(`${server.url}/api/admin/events?${qs}`, { headers: { authorization: `Bearer ${adminKey}` } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { items: { messageId: string }[]; nextCursor: string | null };
    ids.push(...body.items.map((e) => e.messageId));
    cursor = body.nextCursor;
  } while (cursor);
  return ids;
}

/** Every acknowledged id is stored exactly once. */
export function expectAllKept(acked: string[], stored: string[]) {
  const counts = new Map<string, number>();
  for (const id of stored) counts.set(id, (counts.get(id) ?? 0) + 1);
  const missing = acked.filter((id) => !counts.has(id));
  const duplicated = [...counts].filter(([, n]) => n > 1).map(([id]) => id);
  expect(missing, `${missing.length} of ${acked.length} acknowledged events lost`).toEqual([]);
  expect(duplicated).toEqual([]);
}
