// The segment engine when its connection is lost in the middle of a refresh (PostgreSQL stopped
// or restarted ends the session, 57P01): the refresh fails, but gives its connection back to be
// dropped (a pool of 2 survives three such losses) and no longer counts as running, so the next
// change notification wakes the workspace again.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWorkspace } from "../../src/auth/service.ts";
import { createDb, type Db } from "../../src/db/client.ts";
import type { JobLayer } from "../../src/jobs/index.ts";
import { OUTBOX_CHANNEL } from "../../src/outbox/index.ts";
import { SegmentEngine } from "../../src/segments/engine/index.ts";
import { createTestDatabase } from "../support/app.ts";

const APPLICATION = "tidings-engine-connection-loss";

/** The job layer's surface the engine uses, recording what it is asked. */
function recordingJobs() {
  const added: { task: string; payload: unknown }[] = [];
  const listeners = new Map<string, (payload: string) => void | Promise<void>>();
  const jobs: JobLayer = {
    add: async (task, payload) => {
      added.push({ task, payload });
    },
    recurring: () => {},
    listen: (channel, handler) => {
      listeners.set(channel, handler);
    },
    register: () => {},
    start: async () => {},
    stop: async () => {},
    queueStats: async () => ({ depth: 0, oldestAgeSeconds: 0 }),
  };
  return { jobs, added, notify: (channel: string, payload: string) => listeners.get(channel)!(payload) };
}

let db: Db;
let admin: pg.Client;
/** Outside `admin`'s transaction: pg_stat_activity is read once per transaction. */
let watcher: pg.Client;
let workspaceId: string;

beforeAll(async () => {
  const databaseUrl = await createTestDatabase();
  const url = new URL(databaseUrl);
  url.searchParams.set("application_name", APPLICATION);
  db = createDb(url.toString(), 2);
  workspaceId = (await createWorkspace(db.prisma, "connection-loss")).workspace.id;
  admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  watcher = new pg.Client({ connectionString: databaseUrl });
  await watcher.connect();
});
afterAll(async () => {
  await admin?.end();
  await watcher?.end();
  // A leaked connection would hold pool.end() forever.
  await Promise.race([db?.close(), new Promise((r) => setTimeout(r, 2_000))]);
});

/** Runs a refresh whose connection the server ends while it waits on a lock, after the workspace's advisory lock is taken. */
async function refreshLosingItsConnection(engine: SegmentEngine): Promise<unknown> {
  await admin.query("BEGIN");
  await admin.query("LOCK TABLE segment_outbox IN ACCESS EXCLUSIVE MODE");
  const refresh = engine.refresh(workspaceId).then(
    () => null,
    (err: unknown) => err,
  );
  try {
    for (let i = 0; ; i++) {
      const { rows } = await watcher.query<{ n: number }>(
        `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
         WHERE application_name = $1 AND wait_event_type = 'Lock'`,
        [APPLICATION],
      );
      if (rows[0]!.n > 0) break;
      if (i > 200) throw new Error("the refresh never waited on the outbox");
      await new Promise((r) => setTimeout(r, 25));
    }
  } finally {
    await admin.query("ROLLBACK");
  }
  return refresh;
}

describe("segment engine: a connection lost during a refresh", () => {
  it("fails that refresh only: the connection goes back to be dropped, later refreshes run, and a notification wakes the workspace", {
    timeout: 30_000,
  }, async () => {
    const { jobs, added, notify } = recordingJobs();
    const engine = new SegmentEngine({ pool: db.pool, jobs, clock: Date.now });
    engine.register();

    // More losses than the pool has connections: a leaked one per loss would leave none.
    for (let i = 0; i < 3; i++) {
      const err = await refreshLosingItsConnection(engine);
      expect((err as { code?: string } | null)?.code, String(err)).toBe("57P01");
    }
    await engine.refresh(workspaceId);
    expect(db.pool.totalCount).toBeLessThanOrEqual(2);

    // Nothing counts as running any more: a change notification enqueues a refresh.
    await notify(OUTBOX_CHANNEL, workspaceId);
    await expect.poll(() => added.filter((a) => a.task === "segments.refresh").length).toBe(1);
  });
});
