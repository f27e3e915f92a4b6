// Retention (TIDINGS_EVENT_RETENTION_DAYS, TIDINGS_DELIVERY_RETENTION_DAYS): old rows pruned on
// the job layer in bounded batches, young ones kept, nothing pruned by default, and what still
// has to read an event keeps it.
import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.ts";
import { type PruneCursor, type PruneKind, pruneSlice } from "../../src/retention/index.ts";
import { createTestApp, createTestDatabase, type TestApp } from "../support/app.ts";
import { sleep, waitFor } from "../jobs/support.ts";

const DAY = 86_400_000;
const ON = { eventDays: 30, deliveryDays: 7 };

const apps: TestApp[] = [];
const pools: pg.Pool[] = [];
afterAll(async () => {
  for (const app of apps) await app.close();
  for (const pool of pools) await pool.end();
});

async function app(overrides: Parameters<typeof createTestApp>[0] = {}) {
  const a = await createTestApp(overrides);
  apps.push(a);
  return a;
}

/** What one `seed` wrote in a workspace: old rows (to be pruned) and young ones (to be kept). */
const OLD_EVENTS = 120;
const YOUNG_EVENTS = 30;
const OLD_CHANGES = 70;
const YOUNG_CHANGES = 20;
const OLD_BODIES = 60;
/** Size rows older than the retention (35, 33 and 31 days); the newest of them stays (the size at the cutoff). */
const OLD_SIZES = 3;
const YOUNG_SIZES = 2;
const YOUNG_BODIES = 15;

/**
 * Old and young events (by event time, around the 30-day retention), segment membership history
 * (around 30 days) and settled deliveries with their rendered message (around 7 days), plus an
 * old delivery still queued, whose context must stay until it is sent.
 */
async function seed(db: pg.Pool | pg.Client, workspaceId: string, now = Date.now()) {
  const at = (days: number) => new Date(now - days * DAY);
  const events = (n: number, prefix: string, time: Date) =>
    db.query(
      `INSERT INTO events (workspace_id, message_id, type, identity_id, user_id, event, event_time, received_at, payload)
       SELECT $1, $2 || i, 'track', 'u' || (i % 7), 'u' || (i % 7), 'Viewed', $3, $3, '{"properties":{}}'
       FROM generate_series(1, $4) i`,
      [workspaceId, prefix, time, n],
    );
  await events(OLD_EVENTS, "old-", at(40));
  await events(YOUNG_EVENTS, "young-", at(10));
  const segmentId = randomUUID();
  await db.query("INSERT INTO segments (workspace_id, id, name) VALUES ($1, $2, $3)", [workspaceId, segmentId, `s-${segmentId}`]);
  const changes = (n: number, time: Date) =>
    db.query(
      `INSERT INTO segment_membership_changes (workspace_id, segment_id, profile_id, entered, at)
       SELECT $1, $2, 'u' || i, i % 2 = 0, $3 FROM generate_series(1, $4) i`,
      [workspaceId, segmentId, time, n],
    );
  await changes(OLD_CHANGES, at(31));
  await changes(YOUNG_CHANGES, at(29));
  await db.query(
    `INSERT INTO segment_sizes (workspace_id, segment_id, hour, size)
     SELECT $1, $2, date_trunc('hour', $3::timestamptz - d * interval '1 day'), d FROM unnest($4::int[]) d`,
    [workspaceId, segmentId, new Date(now), [35, 33, 31, 29, 10]],
  );
  const deliveries = (n: number, status: string, time: Date) =>
    db.query(
      `INSERT INTO deliveries (workspace_id, id, broadcast_id, user_id, channel, status, contact, rendered, context, created_at)
       SELECT $1, gen_random_uuid(), $5, 'u' || i, 'Webhook', $2::"DeliveryStatus", 'https://hooks.example/x',
         '{"body":"hello"}', '{"event":{"event":"Viewed"}}', $3
       FROM generate_series(1, $4) i`,
      [workspaceId, status, time, n, randomUUID()],
    );
  await deliveries(OLD_BODIES / 3, "Sent", at(8));
  await deliveries(OLD_BODIES / 3, "Failed", at(9));
  await deliveries(OLD_BODIES / 3, "Skipped", at(30));
  await deliveries(YOUNG_BODIES, "Sent", at(6));
  await deliveries(1, "Queued", at(20));
}

interface Counts {
  oldEvents: number;
  youngEvents: number;
  oldChanges: number;
  youngChanges: number;
  oldSizes: number;
  youngSizes: number;
  deliveries: number;
  oldBodies: number;
  youngBodies: number;
  queuedWithContext: number;
}

async function counts(db: pg.Pool, workspaceId: string, now = Date.now()): Promise<Counts> {
  const { rows } = await db.query(
    `SELECT
       (SELECT count(*) FROM events WHERE workspace_id = $1 AND message_id LIKE 'old-%')::int AS "oldEvents",
       (SELECT count(*) FROM events WHERE workspace_id = $1 AND message_id LIKE 'young-%')::int AS "youngEvents",
       (SELECT count(*) FROM segment_membership_changes WHERE workspace_id = $1 AND at < $2)::int AS "oldChanges",
       (SELECT count(*) FROM segment_membership_changes WHERE workspace_id = $1 AND at >= $2)::int AS "youngChanges",
       (SELECT count(*) FROM segment_sizes WHERE workspace_id = $1 AND hour < $2)::int AS "oldSizes",
       -- The seeded ones (a running engine adds the hour it evaluates the segment in).
       (SELECT count(*) FROM segment_sizes WHERE workspace_id = $1 AND hour >= $2 AND hour < $3)::int AS "youngSizes",
       (SELECT count(*) FROM deliveries WHERE workspace_id = $1)::int AS deliveries,
       (SELECT count(*) FROM deliveries WHERE workspace_id = $1 AND status <> 'Queued' AND created_at < $3
          AND (rendered IS NOT NULL OR context IS NOT NULL))::int AS "oldBodies",
       (SELECT count(*) FROM deliveries WHERE workspace_id = $1 AND created_at >= $3 AND rendered IS NOT NULL AND context IS NOT NULL)::int AS "youngBodies",
       (SELECT count(*) FROM deliveries WHERE workspace_id = $1 AND status = 'Queued' AND context IS NOT NULL)::int AS "queuedWithContext"`,
    [workspaceId, new Date(now - 30 * DAY), new Date(now - 7 * DAY)],
  );
  return rows[0];
}

const SEEDED: Counts = {
  oldEvents: OLD_EVENTS,
  youngEvents: YOUNG_EVENTS,
  oldChanges: OLD_CHANGES,
  youngChanges: YOUNG_CHANGES,
  oldSizes: OLD_SIZES,
  youngSizes: YOUNG_SIZES,
  deliveries: OLD_BODIES + YOUNG_BODIES + 1,
  oldBodies: OLD_BODIES,
  youngBodies: YOUNG_BODIES,
  queuedWithContext: 1,
};
const PRUNED: Counts = { ...SEEDED, oldEvents: 0, oldChanges: 0, oldSizes: 1, oldBodies: 0 };

async function pruned(a: TestApp): Promise<Record<PruneKind, number>> {
  const metric = await a.ctx.registry.getSingleMetric("tidings_retention_pruned_total")!.get();
  const by = (kind: PruneKind) => metric.values.find((v) => v.labels.kind === kind)?.value ?? 0;
  return {
    events: by("events"),
    membership_changes: by("membership_changes"),
    segment_sizes: by("segment_sizes"),
    delivery_bodies: by("delivery_bodies"),
  };
}

const EXPECTED_PRUNED = { events: OLD_EVENTS, membership_changes: OLD_CHANGES, segment_sizes: OLD_SIZES - 1, delivery_bodies: OLD_BODIES };

/** Waits until no retention job is waiting or running. */
const pruneJobsDone = (db: pg.Pool) =>
  waitFor("the retention jobs to finish", async () => {
    const { rows } = await db.query("SELECT count(*)::int AS n FROM graphile_worker.jobs WHERE task_identifier = 'retention.prune'");
    return rows[0].n === 0;
  });

/**
 * Waits until the run a start makes (the recurring tick runs at once, then hourly) is over: its
 * tick has finished, the next is an hour ahead, and the prune jobs it enqueued are done. Rows
 * seeded after it are pruned only when the test wakes retention (seeded before it finished, some
 * were pruned before the test counted them: a flaky failure seen in CI).
 */
const startRunDone = (db: pg.Pool) =>
  waitFor("the start's retention run to finish", async () => {
    const { rows } = await db.query(
      `SELECT
         EXISTS (SELECT 1 FROM graphile_worker.jobs WHERE task_identifier = 'retention.tick' AND run_at <= now()) AS ticking,
         EXISTS (SELECT 1 FROM graphile_worker.jobs WHERE task_identifier = 'retention.tick' AND run_at > now()) AS next,
         EXISTS (SELECT 1 FROM graphile_worker.jobs WHERE task_identifier = 'retention.prune') AS pruning`,
    );
    return !rows[0].ticking && rows[0].next && !rows[0].pruning;
  });

describe("retention on the job layer", () => {
  it("prunes events, membership history and settled deliveries' rendered messages older than the retention, keeps younger ones", async () => {
    // 50 rows a statement and one statement a job: every kind takes several jobs, each enqueuing the next.
    const a = await app({ retention: ON, retentionSlices: { batchSize: 50, sliceMs: 0 } });
    await startRunDone(a.ctx.db.pool);
    await seed(a.ctx.db.pool, a.workspace.id);
    const other = await a.newWorkspace();
    await seed(a.ctx.db.pool, other.id);
    expect(await counts(a.ctx.db.pool, a.workspace.id)).toEqual(SEEDED);

    await a.ctx.retention.wake();
    await waitFor("old rows pruned", async () => (await counts(a.ctx.db.pool, other.id)).oldBodies === 0, 30_000);
    await pruneJobsDone(a.ctx.db.pool);
    for (const ws of [a.workspace.id, other.id]) expect(await counts(a.ctx.db.pool, ws)).toEqual(PRUNED);
    // The delivery rows stay, with their status and contact: only the message and its context go.
    const { rows } = await a.ctx.db.pool.query(
      "SELECT DISTINCT status, contact, rendered, context FROM deliveries WHERE workspace_id = $1 AND created_at < now() - interval '7 days' ORDER BY status",
      [a.workspace.id],
    );
    expect(rows).toEqual([
      { status: "Queued", contact: "https://hooks.example/x", rendered: { body: "hello" }, context: { event: { event: "Viewed" } } },
      { status: "Sent", contact: "https://hooks.example/x", rendered: null, context: null },
      { status: "Failed", contact: "https://hooks.example/x", rendered: null, context: null },
      { status: "Skipped", contact: "https://hooks.example/x", rendered: null, context: null },
    ]);
    expect(await pruned(a)).toEqual({
      events: 2 * OLD_EVENTS,
      membership_changes: 2 * OLD_CHANGES,
      segment_sizes: 2 * (OLD_SIZES - 1),
      delivery_bodies: 2 * OLD_BODIES,
    });
    const metrics = await a.ctx.registry.metrics();
    expect(metrics).toContain(`tidings_retention_pruned_total{kind="events"} ${2 * OLD_EVENTS}`);
  }, 60_000);

  it("prunes nothing by default", async () => {
    expect(loadConfig({}).retention).toEqual({ eventDays: null, deliveryDays: null });
    expect(loadConfig({ TIDINGS_EVENT_RETENTION_DAYS: "0", TIDINGS_DELIVERY_RETENTION_DAYS: "0" }).retention).toEqual({
      eventDays: null,
      deliveryDays: null,
    });
    const a = await app({ retentionSlices: { batchSize: 50, sliceMs: 0 } });
    await seed(a.ctx.db.pool, a.workspace.id);
    await a.ctx.retention.wake();
    // Even a prune job enqueued by hand (left over from a start with retention on) removes nothing.
    await a.ctx.jobs.add("retention.prune", {}, { key: "retention.prune", queue: "retention" });
    await pruneJobsDone(a.ctx.db.pool);
    await sleep(300);
    expect(await counts(a.ctx.db.pool, a.workspace.id)).toEqual(SEEDED);
    expect(await pruned(a)).toEqual({ events: 0, membership_changes: 0, segment_sizes: 0, delivery_bodies: 0 });
  }, 30_000);

  it("two workers on one database prune each row once", async () => {
    const slices = { batchSize: 20, sliceMs: 0 };
    const a = await app({ retention: ON, retentionSlices: slices });
    const b = await app({ retention: ON, retentionSlices: slices, databaseUrl: a.databaseUrl });
    await startRunDone(a.ctx.db.pool);
    await seed(a.ctx.db.pool, a.workspace.id);
    await Promise.all([a.ctx.retention.wake(), b.ctx.retention.wake()]);
    await waitFor("old rows pruned", async () => (await counts(a.ctx.db.pool, a.workspace.id)).oldBodies === 0, 30_000);
    await pruneJobsDone(a.ctx.db.pool);
    expect(await counts(a.ctx.db.pool, a.workspace.id)).toEqual(PRUNED);
    const [pa, pb] = [await pruned(a), await pruned(b)];
    expect({
      events: pa.events + pb.events,
      membership_changes: pa.membership_changes + pb.membership_changes,
      segment_sizes: pa.segment_sizes + pb.segment_sizes,
      delivery_bodies: pa.delivery_bodies + pb.delivery_bodies,
    }).toEqual(EXPECTED_PRUNED);
    const { rows: failed } = await a.ctx.db.pool.query(
      "SELECT task_identifier, last_error FROM graphile_worker.jobs WHERE last_error IS NOT NULL",
    );
    expect(failed).toEqual([]);
  }, 60_000);
});

describe("pruneSlice", () => {
  async function database() {
    const pool = new pg.Pool({ connectionString: await createTestDatabase(), max: 6 });
    pools.push(pool);
    const { rows } = await pool.query("INSERT INTO workspaces (id, name) VALUES (gen_random_uuid(), $1) RETURNING id", [
      `ws-${randomUUID()}`,
    ]);
    return { pool, workspaceId: rows[0].id as string };
  }

  /** Slices until done; each slice's rows by kind. */
  async function slices(pool: pg.Pool, batchSize: number) {
    const passes: Partial<Record<PruneKind, number>>[] = [];
    let cursor: PruneCursor | null = null;
    do {
      const pass: Partial<Record<PruneKind, number>> = {};
      cursor = await pruneSlice(
        pool,
        { policy: ON, batchSize, sliceMs: 0, now: Date.now(), onPruned: (kind, n) => (pass[kind] = (pass[kind] ?? 0) + n) },
        cursor,
      );
      passes.push(pass);
    } while (cursor && passes.length < 1000);
    return passes;
  }

  it("runs bounded batches: each statement prunes at most batchSize rows, and the passes prune them all", async () => {
    const { pool, workspaceId } = await database();
    await seed(pool, workspaceId);
    const passes = await slices(pool, 50);
    for (const pass of passes) for (const n of Object.values(pass)) expect(n).toBeLessThanOrEqual(50);
    // 120 events: 50 + 50 + 20; 70 changes: 50 + 20; 60 bodies: 50 + 10.
    expect(passes.map((p) => p.events).filter(Boolean)).toEqual([50, 50, 20]);
    expect(passes.map((p) => p.membership_changes).filter(Boolean)).toEqual([50, 20]);
    expect(passes.map((p) => p.delivery_bodies).filter(Boolean)).toEqual([50, 10]);
    expect(passes.map((p) => p.segment_sizes).filter(Boolean)).toEqual([2]);
    expect(await counts(pool, workspaceId)).toEqual(PRUNED);
    // The size at the cutoff stays: the history still answers for every hour since.
    const sizes = await pool.query("SELECT size FROM segment_sizes WHERE workspace_id = $1 ORDER BY hour", [workspaceId]);
    expect(sizes.rows.map((r) => r.size)).toEqual([31, 29, 10]);
  });

  it("keeps old events the segment engine has not drained yet or a journey signal still names", async () => {
    const { pool, workspaceId } = await database();
    await seed(pool, workspaceId);
    // A journey signal names old-1; an outbox row waits since 40 days ago plus a minute: the old
    // events received from then on (old-100 and up, moved there) have not been seen by the engine.
    await pool.query("INSERT INTO journey_signals (workspace_id, message_id, user_id, at) VALUES ($1, 'old-1', 'u1', now())", [
      workspaceId,
    ]);
    const waitingSince = new Date(Date.now() - 40 * DAY + 60_000);
    await pool.query("UPDATE events SET received_at = $3 WHERE workspace_id = $1 AND message_id LIKE 'old-1__' AND message_id >= $2", [
      workspaceId,
      "old-100",
      waitingSince,
    ]);
    await pool.query("INSERT INTO segment_outbox (workspace_id, ids, keys, created_at) VALUES ($1, '{u1}', '{e:Viewed}', $2)", [
      workspaceId,
      waitingSince,
    ]);
    await slices(pool, 1000);
    const { rows } = await pool.query(
      "SELECT message_id FROM events WHERE workspace_id = $1 AND message_id LIKE 'old-%' ORDER BY message_id",
      [workspaceId],
    );
    const kept = ["old-1", ...Array.from({ length: 21 }, (_, i) => `old-${100 + i}`)].sort();
    expect(rows.map((r) => r.message_id)).toEqual(kept);
    // Once the engine has drained the outbox and the runtime taken the signal, they go too.
    await pool.query("DELETE FROM segment_outbox WHERE workspace_id = $1", [workspaceId]);
    await pool.query("DELETE FROM journey_signals WHERE workspace_id = $1", [workspaceId]);
    await slices(pool, 1000);
    expect((await counts(pool, workspaceId)).oldEvents).toBe(0);
  });

  it("two pruners at once prune every old row exactly once, without error", async () => {
    const { pool, workspaceId } = await database();
    await seed(pool, workspaceId);
    const [a, b] = await Promise.all([slices(pool, 7), slices(pool, 7)]);
    const total = (kind: PruneKind) => [...a, ...b].reduce((n, p) => n + (p[kind] ?? 0), 0);
    expect({
      events: total("events"),
      membership_changes: total("membership_changes"),
      segment_sizes: total("segment_sizes"),
      delivery_bodies: total("delivery_bodies"),
    }).toEqual(EXPECTED_PRUNED);
    expect(await counts(pool, workspaceId)).toEqual(PRUNED);
  });
});
