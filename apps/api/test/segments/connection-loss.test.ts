// The segment engine when its connection is lost in the middle of a refresh (PostgreSQL stopped
// or restarted ends the session, 57P01): the refresh fails, but gives its connection back to be
// dropped (a pool of 2 survives three such losses) and no longer counts as running, so the next
// change notification wakes the workspace again. The same for a drain evaluating segments over a
// copy of their events (scope-events.ts), lost or cancelled midway.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWorkspace } from "../../src/auth/service.ts";
import { createDb, type Db } from "../../src/db/client.ts";
import { OUTBOX_CHANNEL } from "../../src/outbox/index.ts";
import { SegmentEngine } from "../../src/segments/engine/index.ts";
import { createTestDatabase } from "../support/app.ts";
import { recordingJobs } from "./support.ts";

const APPLICATION = "tidings-engine-connection-loss";

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

/**
 * Runs a refresh of `workspace` whose statement waiting on a lock of `table` the server ends
 * (`pg_terminate_backend`: the session ends) or cancels (`pg_cancel_backend`: the session stays).
 */
async function refreshInterrupted(
  engine: SegmentEngine,
  { table = "segment_outbox", kill = "pg_terminate_backend", workspace = workspaceId } = {},
): Promise<unknown> {
  await admin.query("BEGIN");
  await admin.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
  const refresh = engine.refresh(workspace).then(
    () => null,
    (err: unknown) => err,
  );
  try {
    for (let i = 0; ; i++) {
      const { rows } = await watcher.query<{ n: number }>(
        `SELECT count(${kill}(pid))::int AS n FROM pg_stat_activity
         WHERE application_name = $1 AND wait_event_type = 'Lock'`,
        [APPLICATION],
      );
      if (rows[0]!.n > 0) break;
      if (i > 200) throw new Error(`the refresh never waited on ${table}`);
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
      const err = await refreshInterrupted(engine);
      expect((err as { code?: string } | null)?.code, String(err)).toBe("57P01");
    }
    await engine.refresh(workspaceId);
    expect(db.pool.totalCount).toBeLessThanOrEqual(2);

    // Nothing counts as running any more: a change notification enqueues a refresh.
    await notify(OUTBOX_CHANNEL, workspaceId);
    await expect.poll(() => added.filter((a) => a.task === "segments.refresh").length).toBe(1);
  });

  it("a drain copying events for several segments: a lost or cancelled statement fails that refresh, and the next one drains it", {
    timeout: 30_000,
  }, async () => {
    const { jobs } = recordingJobs();
    const engine = new SegmentEngine({ pool: db.pool, jobs, clock: Date.now });
    const ws = (await createWorkspace(db.prisma, "connection-loss-copy")).workspace.id;
    // Two segments reading Bought for the same user: one unit, over one copy of the user's events.
    for (const times of [1, 2]) {
      await admin.query("INSERT INTO segments (workspace_id, id, name, definition) VALUES ($1, gen_random_uuid(), $2, $3)", [
        ws,
        `bought-${times}`,
        JSON.stringify({ entryNode: { type: "Performed", id: "b", event: "Bought", times, timesOperator: "=" }, nodes: [] }),
      ]);
    }
    await engine.refresh(ws);
    await admin.query("INSERT INTO profiles (workspace_id, profile_id) VALUES ($1, 'ann')", [ws]);
    const buy = async (n: number) => {
      await admin.query(
        `INSERT INTO events (workspace_id, message_id, type, identity_id, user_id, event, event_time, received_at, payload)
         VALUES ($1, $2, 'track', 'ann', 'ann', 'Bought', now(), now(), '{}')`,
        [ws, `buy-${n}`],
      );
      await admin.query("INSERT INTO segment_outbox (workspace_id, ids, keys) VALUES ($1, '{ann}', '{e:Bought}')", [ws]);
    };
    const members = async () =>
      (
        await admin.query<{ name: string }>(
          "SELECT s.name FROM segment_memberships m JOIN segments s ON s.id = m.segment_id WHERE m.workspace_id = $1 ORDER BY 1",
          [ws],
        )
      ).rows.map((r) => r.name);

    // The unit's first evaluation waits on the memberships, after the copy: its session ends.
    await buy(1);
    const lost = await refreshInterrupted(engine, { table: "segment_memberships", workspace: ws });
    expect((lost as { code?: string } | null)?.code, String(lost)).toBe("57P01");
    await engine.refresh(ws);
    expect(await members()).toEqual(["bought-1"]);

    // Cancelled instead: the session stays and goes back to the pool, without its copy (the next
    // drain on it makes one again), so the next refresh drains what is left.
    await buy(2);
    const cancelled = await refreshInterrupted(engine, { table: "segment_memberships", kill: "pg_cancel_backend", workspace: ws });
    expect((cancelled as { code?: string } | null)?.code, String(cancelled)).toBe("57014");
    await engine.refresh(ws);
    expect(await members()).toEqual(["bought-2"]);
    expect(db.pool.totalCount).toBeLessThanOrEqual(2);
  });
});
