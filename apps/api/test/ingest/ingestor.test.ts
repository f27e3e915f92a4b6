// The Ingestor against a real PostgreSQL: group commit (each request acknowledged only once its
// events are committed), the bound on queued events, a failing request kept from failing its
// neighbours, and the retry of commits that lose a deadlock or a serialization conflict.
// Failures are provoked for real: concurrent transactions, and constraints or triggers created
// in this file's own database.
import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Ingestor, type IngestorOptions } from "../../src/ingest/ingestor.ts";
import { normalizeEvent } from "../../src/ingest/normalize.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { expectError, ingest } from "./helpers.ts";

let t: TestApp;
let pool: pg.Pool;
let ws: string;
beforeAll(async () => {
  t = await createTestApp();
  pool = t.ctx.db.pool;
  ws = t.workspace.id;
});
afterAll(async () => {
  await t.close();
});

const normalize = (body: Record<string, unknown>) =>
  normalizeEvent({ messageId: randomUUID(), ...body } as never, body.type as never, {}, new Date(), 32768, "(body)");
const track = (userId: string, extra: Record<string, unknown> = {}) => normalize({ type: "track", userId, event: "Clicked", ...extra });
const tracks = (n: number, userId: string) => Array.from({ length: n }, () => track(userId));

const ingestor = (options: Partial<IngestorOptions> = {}) =>
  new Ingestor(pool, { maxConcurrentCommits: 1, maxEventsPerCommit: 1000, maxQueuedEvents: 10_000, ...options });

async function storedMessageIds(messageIds: string[]): Promise<string[]> {
  const { rows } = await pool.query<{ message_id: string }>(
    "SELECT message_id FROM events WHERE workspace_id = $1 AND message_id = ANY($2) ORDER BY message_id",
    [ws, messageIds],
  );
  return rows.map((r) => r.message_id);
}

/** A transaction of the test's own, holding `messageId` as an uncommitted event: a commit writing it waits. */
async function holdMessageId(messageId: string): Promise<{ client: pg.PoolClient; pid: number }> {
  const client = await pool.connect();
  await client.query("BEGIN");
  await client.query(
    `INSERT INTO events (workspace_id, message_id, type, identity_id, event_time, received_at, payload) VALUES ($1, $2, 'track', 'holder', now(), now(), '{}')`,
    [ws, messageId],
  );
  const { rows } = await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
  return { client, pid: rows[0]!.pid };
}

/** Resolves once some backend waits for a lock held by backend `pid`. */
async function waitUntilBlockedBy(pid: number) {
  const blocked = async () =>
    (await pool.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))", [pid])).rows[0].n;
  await expect.poll(blocked, { timeout: 10_000, interval: 20, message: `no backend waits for backend ${pid}` }).toBeGreaterThan(0);
}

describe("group commit", () => {
  it("commits 200 concurrent requests in a handful of transactions", async () => {
    let commits = 0;
    const ing = ingestor({ maxConcurrentCommits: 2, maxEventsPerCommit: 5000, onCommit: () => commits++ });
    const events = Array.from({ length: 200 }, (_, i) => track(`gc-${i}`));
    const acked: string[] = [];
    await Promise.all(
      events.map((ev) =>
        ing.ingest(ws, [ev]).then(async () => {
          // Acknowledged means committed: the row is visible to another connection now.
          expect(await storedMessageIds([ev.messageId])).toEqual([ev.messageId]);
          acked.push(ev.messageId);
        }),
      ),
    );
    expect(acked).toHaveLength(200);
    expect(commits).toBeLessThanOrEqual(4);
    await ing.close();
  });
});

describe("back-pressure", () => {
  it("counts queued events against its bound and frees them once they are committed", async () => {
    const ing = ingestor({ maxQueuedEvents: 5 });
    // The first request starts committing at once; the next ones queue behind it.
    const committing = ing.ingest(ws, tracks(1, "bp-a"));
    const queued = [ing.ingest(ws, tracks(3, "bp-b")), ing.ingest(ws, tracks(2, "bp-c"))];
    // 5 events queued: one more is beyond the bound.
    await expect(ing.ingest(ws, tracks(1, "bp-d"))).rejects.toMatchObject({ code: "UNAVAILABLE", headers: { "retry-after": "1" } });
    await Promise.all([committing, ...queued]);
    // Committed events no longer count: the whole bound is free again.
    const after = ing.ingest(ws, tracks(1, "bp-e"));
    await expect(ing.ingest(ws, tracks(5, "bp-f"))).resolves.toBeUndefined();
    await after;
    await ing.close();
  });

  it("answers 503 UNAVAILABLE with Retry-After while the queue is full", async () => {
    // A replica of the server on the same database whose ingestion queues at most 2 events.
    const replica = await createTestApp({ databaseUrl: t.databaseUrl, ingestMaxQueuedEvents: 2 });
    const small = replica.ctx.ingestor;
    const blocked = track("http-a");
    const holder = await holdMessageId(blocked.messageId);
    let pending: Promise<unknown>[] = [];
    try {
      pending = [small.ingest(ws, [blocked]), small.ingest(ws, tracks(2, "http-b"))];
      await waitUntilBlockedBy(holder.pid);
      // Queued instead of refused, the request would wait for the held transaction.
      const res = await Promise.race([
        ingest(replica, "track", { userId: "http-c", event: "Clicked" }),
        new Promise<null>((resolve) => setTimeout(() => resolve(null), 3000)),
      ]);
      expect(res, "the request was queued beyond the bound instead of refused").not.toBeNull();
      expectError(res!, 503, "UNAVAILABLE");
      expect(res!.headers.get("retry-after")).toBe("1");
    } finally {
      await holder.client.query("ROLLBACK");
      holder.client.release();
    }
    await Promise.all(pending);
    await replica.close();
  });

  it("refuses work after close", async () => {
    const ing = ingestor();
    await ing.ingest(ws, tracks(1, "closing"));
    await ing.close();
    await expect(ing.ingest(ws, tracks(1, "closed"))).rejects.toMatchObject({ code: "UNAVAILABLE", headers: { "retry-after": "1" } });
  });
});

describe("a request PostgreSQL refuses", () => {
  it("fails alone: the other requests of its group are committed", async () => {
    // A constraint of this database refuses one event, as a row PostgreSQL cannot store would.
    await pool.query(`ALTER TABLE events ADD CONSTRAINT test_refuse_poison CHECK (event IS DISTINCT FROM 'Poison') NOT VALID`);
    try {
      const ing = ingestor();
      const first = track("iso-first");
      const before = track("iso-before");
      const bad = track("iso-bad", { event: "Poison" });
      const after = [track("iso-after"), track("iso-after")];
      // The first request commits alone; the next three queue behind it and share one commit.
      const results = await Promise.allSettled([
        ing.ingest(ws, [first]),
        ing.ingest(ws, [before]),
        ing.ingest(ws, [bad]),
        ing.ingest(ws, after),
      ]);
      expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
      expect((results[2] as PromiseRejectedResult).reason).toMatchObject({ code: "23514", constraint: "test_refuse_poison" });
      const good = [first, before, ...after].map((e) => e.messageId);
      expect(await storedMessageIds([...good, bad.messageId])).toEqual([...good].sort());
      await ing.close();
    } finally {
      await pool.query("ALTER TABLE events DROP CONSTRAINT test_refuse_poison");
    }
  });
});

describe("retries", () => {
  const deadlocks = async () =>
    Number((await pool.query("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")).rows[0].deadlocks);

  it("retries a commit that loses a deadlock (40P01) and acknowledges it once stored", async () => {
    // PostgreSQL aborts the side whose deadlock check runs first once the cycle exists: the
    // commit's connections check after 5 s, the other transaction after 60 s, so the commit is the
    // one aborted however slowly step 3 follows step 2 on a loaded machine.
    const commitPool = new pg.Pool({ connectionString: t.databaseUrl, max: 2, options: "-c deadlock_timeout=5s" });
    const ing = new Ingestor(commitPool, { maxConcurrentCommits: 1, maxEventsPerCommit: 1000, maxQueuedEvents: 10_000 });
    const ev = normalize({ type: "identify", userId: "deadlock-user", traits: { plan: "pro" } });
    const deadlocksBefore = await deadlocks();
    // 1. Another transaction writes the event's messageId first, uncommitted.
    const other = await holdMessageId(ev.messageId);
    // 2. The commit creates the profile, then waits for that messageId.
    const outcome = ing.ingest(ws, [ev]).then(
      () => "acknowledged",
      (err: unknown) => err,
    );
    try {
      await waitUntilBlockedBy(other.pid);
      // 3. The other transaction now writes the same profile: each waits for the other.
      //    PostgreSQL aborts the commit with 40P01; the other goes on.
      await other.client.query("SET LOCAL deadlock_timeout = '60s'");
      await other.client.query(`INSERT INTO profiles (workspace_id, profile_id) VALUES ($1, 'deadlock-user')`, [ws]);
    } finally {
      await other.client.query("ROLLBACK");
      other.client.release();
    }
    expect(await outcome).toBe("acknowledged");
    expect(await storedMessageIds([ev.messageId])).toEqual([ev.messageId]);
    const { rows } = await pool.query("SELECT traits FROM profiles WHERE workspace_id = $1 AND profile_id = 'deadlock-user'", [ws]);
    expect(rows).toEqual([{ traits: { plan: "pro" } }]);
    // The deadlock did happen (statistics reach pg_stat_database within about a second).
    await expect.poll(deadlocks, { timeout: 10_000, interval: 100, message: "no deadlock was recorded" }).toBeGreaterThan(deadlocksBefore);
    await ing.close();
    await commitPool.end();
  });

  /** Makes inserts into profile_aliases fail with 40001 on their first `failures` attempts; returns the attempt count. */
  async function failAliasInserts(failures: number): Promise<{ attempts: () => Promise<number>; drop: () => Promise<void> }> {
    const name = `test_fail_${randomUUID().replace(/-/g, "")}`;
    await pool.query(`CREATE SEQUENCE ${name}`);
    await pool.query(`CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        -- nextval survives the rollback, so it counts attempts.
        IF nextval('${name}') <= ${failures} THEN
          RAISE EXCEPTION USING ERRCODE = 'serialization_failure', MESSAGE = 'test: could not serialize access';
        END IF;
        RETURN NEW;
      END $$`);
    await pool.query(`CREATE TRIGGER ${name} BEFORE INSERT ON profile_aliases FOR EACH ROW EXECUTE FUNCTION ${name}()`);
    return {
      attempts: async () => Number((await pool.query(`SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS n FROM ${name}`)).rows[0].n),
      drop: async () => {
        await pool.query(`DROP TRIGGER ${name} ON profile_aliases`);
        await pool.query(`DROP FUNCTION ${name}()`);
        await pool.query(`DROP SEQUENCE ${name}`);
      },
    };
  }

  it("retries a serialization failure (40001) on the transactional path", async () => {
    const failing = await failAliasInserts(1);
    try {
      const ing = ingestor();
      const alias = normalize({ type: "alias", previousId: "ser-old", userId: "ser-user" });
      await ing.ingest(ws, [alias]);
      expect(await failing.attempts()).toBe(2);
      const { rows } = await pool.query("SELECT profile_id FROM profile_aliases WHERE workspace_id = $1 AND alias_id = 'ser-old'", [ws]);
      expect(rows).toEqual([{ profile_id: "ser-user" }]);
      await ing.close();
    } finally {
      await failing.drop();
    }
  });

  it("gives up after three attempts and reports the error", async () => {
    const failing = await failAliasInserts(1000);
    try {
      const ing = ingestor();
      const alias = normalize({ type: "alias", previousId: "ser-old-2", userId: "ser-user-2" });
      await expect(ing.ingest(ws, [alias])).rejects.toMatchObject({ code: "40001" });
      expect(await failing.attempts()).toBe(3);
      expect(await storedMessageIds([alias.messageId])).toEqual([]);
      await ing.close();
    } finally {
      await failing.drop();
    }
  });
});
