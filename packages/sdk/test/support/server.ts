// Starts the real Tidings server as its own process (`node apps/api/dist/main.js`, as in
// production) on a free port, with an embedded PostgreSQL in a temporary data directory, and
// reads the default workspace's keys from its first-start banner. Used by the tests' global
// setup and by bench/track-rate.ts.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
export const SERVER_ENTRY = path.join(REPO_ROOT, "apps/api/dist/main.js");
export const ROOT_KEY = "sdk-test-root-key-0123456789abcdef";

export interface RunningServer {
  url: string;
  rootKey: string;
  workspaceId: string;
  writeKey: string;
  adminKey: string;
  stop(): Promise<void>;
}

/**
 * Rebuilds what changed since the last build (the server, and the packages the pack test packs),
 * with the workspace's own incremental build; `TIDINGS_SDK_TEST_NO_BUILD=1` skips it.
 */
export function ensureBuilt(): void {
  if (process.env.TIDINGS_SDK_TEST_NO_BUILD === "1" && existsSync(SERVER_ENTRY)) return;
  const r = spawnSync(process.execPath, [path.join(REPO_ROOT, "scripts/build.mjs"), "--changed"], { cwd: REPO_ROOT, stdio: "inherit" });
  if (r.status !== 0) throw new Error(`node scripts/build.mjs --changed failed (${r.status ?? r.signal})`);
}

function waitForBanner(child: ChildProcess): Promise<RegExpMatchArray> {
  const banner =
    /Created workspace "[^"]*" \(([0-9a-f-]{36})\)[\s\S]*?write key:\s+(\S+)[\s\S]*?admin API key:\s+(\S+)[\s\S]*?listening on (http:\/\/\S+)\n/;
  return new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`the server did not start within 60 s:\n${out}`)), 60_000);
    const on = (chunk: Buffer) => {
      out += chunk.toString();
      const m = out.match(banner);
      if (m) {
        clearTimeout(timer);
        child.stdout?.off("data", on);
        child.stderr?.off("data", on);
        resolve(m);
      }
    };
    child.stdout?.on("data", on);
    child.stderr?.on("data", on);
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the server exited (${code}) before it was ready:\n${out}`));
    });
  });
}

export async function startServer(env: Record<string, string> = {}): Promise<RunningServer> {
  if (!existsSync(SERVER_ENTRY)) throw new Error(`${SERVER_ENTRY} is missing: run \`pnpm build\``);
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "tidings-sdk-test-"));
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    // The port the kernel gives it, read back from its "listening on" line (a port picked here and
    // freed for it could be taken meanwhile by another listener).
    PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    TIDINGS_DATA_DIR: dataDir,
    TIDINGS_ROOT_KEY: ROOT_KEY,
    TIDINGS_SECRET_KEY: "sdk-test-secret-key-0123456789abcdef0123456789",
    TIDINGS_KEY_CACHE_SECONDS: "0",
    ...env,
  };
  // Without DATABASE_URL the server starts its embedded PostgreSQL in the data directory.
  if (!env.DATABASE_URL) delete childEnv.DATABASE_URL;
  const child = spawn(process.execPath, [SERVER_ENTRY], { cwd: dataDir, env: childEnv, stdio: ["ignore", "pipe", "pipe"] });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  try {
    const [, workspaceId, writeKey, adminKey, url] = await waitForBanner(child);
    // Keep draining the pipes so the server never blocks on a full one.
    child.stdout?.resume();
    child.stderr?.resume();
    return {
      url: url!,
      rootKey: ROOT_KEY,
      workspaceId: workspaceId!,
      writeKey: writeKey!,
      adminKey: adminKey!,
      async stop() {
        if (child.exitCode === null) child.kill("SIGTERM");
        const killer = setTimeout(() => child.kill("SIGKILL"), 20_000);
        await exited;
        clearTimeout(killer);
        await rm(dataDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    child.kill("SIGKILL");
    await exited;
    await rm(dataDir, { recursive: true, force: true });
    throw err;
  }
}
