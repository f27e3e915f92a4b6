// Durability of acknowledged events: a real server process and its embedded PostgreSQL (fsync
// on) are SIGKILLed together in the middle of concurrent ingestion. After a restart on the same
// data directory every batch that got a 204 must be there, each event exactly once. Then a
// SIGTERM must shut the server down cleanly (exit code 0).
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { findConsole } from "../../src/http/console.ts";
import {
  BATCH,
  expectAllKept,
  killStarted,
  postmasterPid,
  readCredentials,
  startLoad,
  startServer,
  storedMessageIds,
  waitGone,
} from "./server-process.ts";

const LOOPS = 8;
const INGEST_MS = 2_000;

let dataDir: string | null = null;

afterAll(async () => {
  await killStarted();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe("crash safety", () => {
  it("keeps every acknowledged event across a SIGKILL of the server and its PostgreSQL, then shuts down cleanly", {
    timeout: 60_000,
  }, async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), "tidings-crash-"));
    const first = await startServer(dataDir);
    const creds = await readCredentials(dataDir);

    const load = startLoad(first, creds.writeKey, "crash", LOOPS);
    await new Promise((r) => setTimeout(r, INGEST_MS));
    // PostgreSQL runs in a session of its own (so a terminal's Ctrl-C does not reach it): kill both.
    const pgid = first.child.pid!;
    const postmaster = postmasterPid(dataDir);
    process.kill(-pgid, "SIGKILL");
    process.kill(postmaster, "SIGKILL");
    await load.stop();
    const [, signal] = await first.exited;
    expect(signal).toBe("SIGKILL");
    await waitGone(pgid, true);
    await waitGone(postmaster);
    expect(load.wrong).toEqual([]);
    expect(load.acked.length).toBeGreaterThanOrEqual(BATCH * LOOPS);

    const second = await startServer(dataDir);
    // Where to open the console, printed with the address (when it is built, as the browser tests need).
    if (findConsole(undefined)) expect(second.output()).toContain(`web console: ${second.url}/console/`);
    const stored = await storedMessageIds(second, creds.adminApiKey);
    expectAllKept(load.acked, stored);
    // Unacknowledged batches may or may not have landed, but never partially: a batch is one commit.
    const perBatch = new Map<string, number>();
    for (const id of stored) {
      const batchKey = id.replace(/-\d+$/, "");
      perBatch.set(batchKey, (perBatch.get(batchKey) ?? 0) + 1);
    }
    for (const [batchKey, n] of perBatch) expect(n, batchKey).toBe(BATCH);

    // Graceful shutdown: SIGTERM to the server alone; it stops its PostgreSQL itself.
    const secondPostmaster = postmasterPid(dataDir);
    process.kill(second.child.pid!, "SIGTERM");
    const [code] = await second.exited;
    expect(code, second.output()).toBe(0);
    await waitGone(second.child.pid!, true);
    await waitGone(secondPostmaster);
  });

  it("a server killed alone does not leave its PostgreSQL running: the next start finds the data directory free", {
    timeout: 60_000,
  }, async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "tidings-orphan-"));
    try {
      const first = await startServer(dir);
      const postmaster = postmasterPid(dir);
      process.kill(-first.child.pid!, "SIGKILL");
      await first.exited;
      await waitGone(postmaster);
      const second = await startServer(dir);
      process.kill(second.child.pid!, "SIGTERM");
      expect((await second.exited)[0], second.output()).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
