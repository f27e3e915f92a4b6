// Starts the built Tidings server (apps/api/dist/main.js) as its own process, on an embedded
// PostgreSQL in a temporary data directory, for the CLI's tests and benchmark. The default
// workspace's keys are read from its stdout, as a first start prints them.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = fileURLToPath(new URL("../../../../", import.meta.url));
export const apiMain = path.join(repoRoot, "apps/api/dist/main.js");

export interface RunningServer {
  host: string;
  rootKey: string;
  workspaceId: string;
  adminApiKey: string;
  writeKey: string;
}

const READY =
  /Created workspace "default" \(([0-9a-f-]{36})\)[\s\S]*?write key:\s+(\S+)[\s\S]*?admin API key:\s+(\S+)[\s\S]*?listening on (http:\/\/\S+)\n/;

export async function startServer(
  extraEnv: Record<string, string> = {},
): Promise<RunningServer & { pid: number; stop: () => Promise<void> }> {
  if (!existsSync(apiMain)) throw new Error(`${apiMain} is missing: build the server first (pnpm build)`);
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "tidings-cli-test-"));
  const rootKey = `tdr_test_${randomBytes(16).toString("hex")}`;
  // The test server owns its embedded database: no DATABASE_URL or key from the caller's shell.
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^(TIDINGS_|DATABASE_URL$|PORT$|HOST$)/.test(k)) env[k] = v;
  const child: ChildProcess = spawn(process.execPath, [apiMain], {
    env: {
      ...env,
      // The port the kernel gives it, read back from its "listening on" line (a port picked here
      // and freed for it could be taken meanwhile by another listener).
      PORT: "0",
      HOST: "127.0.0.1",
      TIDINGS_DATA_DIR: dataDir,
      TIDINGS_ROOT_KEY: rootKey,
      TIDINGS_SECRET_KEY: randomBytes(32).toString("base64url"),
      LOG_LEVEL: "warn",
      ...extraEnv,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const match = await new Promise<RegExpMatchArray>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const m = output.match(READY);
      if (m) resolve(m);
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code) => reject(new Error(`the server exited (${code}) before it was ready:\n${output}`)));
    setTimeout(() => reject(new Error(`the server was not ready within 120 s:\n${output}`)), 120_000).unref();
  });
  const [, workspaceId, writeKey, adminApiKey, host] = match;
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
      await exited;
      clearTimeout(timer);
    }
    await rm(dataDir, { recursive: true, force: true });
  };
  return { host: host!, rootKey, workspaceId: workspaceId!, adminApiKey: adminApiKey!, writeKey: writeKey!, pid: child.pid!, stop };
}
