// A sender's slice (src/messaging/senders.ts), against a deliverer that records what it is asked:
// a chunk it claimed and cannot go on to send is given up (its lease stops, so its rows are
// claimed again after it), never left with a lease renewed for as long as the process lives.
import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Chunk, Deliverer } from "../../src/messaging/send-chunk.ts";
import { SendJobs } from "../../src/messaging/senders.ts";
import { createTestApp, type TestApp } from "../support/app.ts";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

it("gives a claimed chunk up unsent when waking the stream's other senders fails, and fails", async () => {
  const events: string[] = [];
  const deliverer = {
    async claimChunk(): Promise<Chunk> {
      events.push("claim");
      // A backlog (100 rows or more) found by a sender scheduled for a due moment: it wakes the
      // stream's other slots before it sends.
      return { picked: 100, send: async () => void events.push("send"), drop: () => void events.push("drop") };
    },
  } as unknown as Deliverer;
  // Waking goes through this pool: nothing answers there (the database away).
  const away = new pg.Pool({ connectionString: "postgres://tidings@127.0.0.1:1/none" });
  const jobs = new SendJobs({ pool: away, connectionString: t.databaseUrl, jobs: t.ctx.jobs, deliverer, leaseSeconds: 30, log: () => {} });
  jobs.addSource({
    kind: "test",
    column: "broadcast_id",
    settings: async () => ({ rateLimitPerSecond: null }),
    activeStreams: async () => [],
  });
  try {
    await expect(jobs.send({ kind: "test", workspaceId: randomUUID(), id: randomUUID(), slot: 0, due: true })).rejects.toThrow(
      /ECONNREFUSED/,
    );
    expect(events).toEqual(["claim", "drop"]);
  } finally {
    await jobs.close();
    await away.end();
  }
});
