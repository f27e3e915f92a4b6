// Before the CLI's tests: make sure the binary and the server are built from the current
// sources (only what changed is rebuilt), then start one server for every test file. Each file
// makes its own workspace with the root key.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { type RunningServer, repoRoot, startServer } from "./server.js";

declare module "vitest" {
  export interface ProvidedContext {
    server: RunningServer;
    /** A directory for the run's temporary files, removed at the end. */
    tmpRoot: string;
  }
}

export default async function setup(project: TestProject) {
  if (!process.env.TIDINGS_TEST_NO_BUILD) {
    const built = spawnSync(process.execPath, [path.join(repoRoot, "scripts/build.mjs"), "--changed"], { cwd: repoRoot, stdio: "inherit" });
    if (built.status !== 0) throw new Error("building the workspace failed (set TIDINGS_TEST_NO_BUILD=1 to test the dist as it is)");
  }
  const tmpRoot = mkdtempSync(path.join(os.tmpdir(), "tidings-cli-tests-"));
  const server = await startServer();
  const { stop, pid: _pid, ...info } = server;
  project.provide("server", info);
  project.provide("tmpRoot", tmpRoot);
  return async () => {
    await stop();
    rmSync(tmpRoot, { recursive: true, force: true });
  };
}
