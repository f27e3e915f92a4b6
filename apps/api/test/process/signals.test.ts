// Ctrl-C, SIGTERM and SIGHUP under load. A terminal's Ctrl-C signals the whole foreground process
// group; the embedded PostgreSQL must not be in it, or it shuts down first and requests still in
// flight fail with "the database system is shutting down". Every answer must be 204 or 503 with
// Retry-After, the process must exit 0, and every acknowledged event must be there afterwards.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  expectAllKept,
  killStarted,
  postmasterPid,
  readCredentials,
  startLoad,
  startServer,
  storedMessageIds,
  waitGone,
} from "./server-process.ts";

let dataDir: string | null = null;

afterAll(async () => {
  await killStarted();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe("shutdown by signal under load", () => {
  it("drains in-flight requests and queued commits before the embedded PostgreSQL stops", { timeout: 120_000 }, async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), "tidings-signals-"));
    const acked: string[] = [];
    // [signal, sent to the whole process group as a terminal does?]
    for (const [signal, group] of [
      ["SIGINT", true],
      ["SIGHUP", true],
      ["SIGTERM", false],
    ] as const) {
      const server = await startServer(dataDir);
      const creds = await readCredentials(dataDir);
      const load = startLoad(server, creds.writeKey, signal, 16);
      await new Promise((r) => setTimeout(r, 1_500));
      const postmaster = postmasterPid(dataDir);
      process.kill(group ? -server.child.pid! : server.child.pid!, signal);
      // The clients keep sending while the server drains, until it has gone.
      const [code] = await server.exited;
      await load.stop();
      expect(load.wrong, `${signal}: answers other than 204 or 503 + Retry-After`).toEqual([]);
      expect(code, `${signal}:\n${server.output()}`).toBe(0);
      expect(server.output()).toContain(`${signal}: finishing in-flight requests`);
      await waitGone(postmaster);
      expect(load.acked.length, signal).toBeGreaterThan(0);
      acked.push(...load.acked);
    }
    const last = await startServer(dataDir);
    expectAllKept(acked, await storedMessageIds(last, (await readCredentials(dataDir)).adminApiKey));
    process.kill(last.child.pid!, "SIGTERM");
    expect((await last.exited)[0]).toBe(0);
  });
});
