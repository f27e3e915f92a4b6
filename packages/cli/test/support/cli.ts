// Runs the built `tidings` binary as a subprocess, with a clean environment: only what the test
// passes (plus PATH and a private config directory) reaches it.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { inject } from "vitest";

export const bin = fileURLToPath(new URL("../../dist/bin.js", import.meta.url));

export interface CliResult {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  env?: Record<string, string | undefined>;
  cwd?: string;
  input?: string;
  /** Called once the process is spawned (to kill it mid-way). */
  onSpawn?: (child: ChildProcess) => void;
}

/** A new empty directory under the run's temporary root (removed when the run ends). */
export const tempDir = (prefix: string) => mkdtempSync(path.join(inject("tmpRoot"), `${prefix}-`));

/** A fresh, empty config directory (XDG_CONFIG_HOME) so no saved profile leaks in. */
export const tempConfigHome = () => tempDir("config");

export function runCli(args: string[], opts: CliOptions = {}): Promise<CliResult> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? "", HOME: tempDir("home") };
  for (const [k, v] of Object.entries(opts.env ?? {})) if (v !== undefined) env[k] = v;
  env.XDG_CONFIG_HOME ??= tempConfigHome();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { env, cwd: opts.cwd, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", reject);
    child.on("close", (status, signal) => resolve({ status, signal, stdout, stderr }));
    child.stdin.end(opts.input ?? "");
    opts.onSpawn?.(child);
  });
}

export interface Workspace {
  host: string;
  workspaceId: string;
  apiKey: string;
  writeKey: string;
  rootKey: string;
  /** Environment that points the CLI at this workspace. */
  env: Record<string, string>;
}

/** A new workspace on the test server, made with the CLI itself (`workspaces create --json`). */
export async function newWorkspace(name: string): Promise<Workspace> {
  const server = inject("server");
  const unique = `${name}-${Math.random().toString(36).slice(2, 8)}`;
  const res = await runCli(["workspaces", "create", unique, "--json"], {
    env: { TIDINGS_HOST: server.host, TIDINGS_ROOT_KEY: server.rootKey },
  });
  if (res.status !== 0) throw new Error(`workspaces create failed: ${res.stderr}`);
  const created = JSON.parse(res.stdout) as { workspace: { id: string }; adminApiKey: string; writeKey: string };
  const ws = {
    host: server.host,
    workspaceId: created.workspace.id,
    apiKey: created.adminApiKey,
    writeKey: created.writeKey,
    rootKey: server.rootKey,
  };
  return { ...ws, env: { TIDINGS_HOST: ws.host, TIDINGS_API_KEY: ws.apiKey, TIDINGS_WRITE_KEY: ws.writeKey } };
}

/** Calls the admin API directly (to check what the CLI did without trusting the CLI). */
export async function adminGet<T>(ws: Workspace, pathAndQuery: string): Promise<T> {
  const res = await fetch(new URL(pathAndQuery, ws.host), { headers: { authorization: `Bearer ${ws.apiKey}` } });
  if (!res.ok) throw new Error(`GET ${pathAndQuery}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** Counts the workspace's stored events (every page of GET /api/admin/events). */
export async function countEvents(ws: Workspace): Promise<{ total: number; distinct: number }> {
  const ids = new Set<string>();
  let total = 0;
  let cursor: string | null = null;
  do {
    const page: { items: { messageId: string }[]; nextCursor: string | null } = await adminGet(
      ws,
      `/api/admin/events?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
    );
    for (const e of page.items) ids.add(e.messageId);
    total += page.items.length;
    cursor = page.nextCursor;
  } while (cursor);
  return { total, distinct: ids.size };
}
