// The segment engine: keeps every segment's membership current (docs/segments.md).
//
// Work arrives three ways, all durable in PostgreSQL: outbox rows written in the commit of a
// change (ingestion, assignments, manual members, deletions), segments whose definition is newer
// than their last recompute, and timers whose instant has come. One job per workspace,
// `segments.refresh`, applies all three, under a per-workspace advisory lock, so no two
// refreshes of a workspace ever overlap (within one, the segments reading events and the others
// drain the outbox apart, at once: drain.ts). Workers wake it
// on the outbox's NOTIFY, and every workspace with work when their LISTEN connection comes back;
// a job every second wakes it for timers, recomputes and anything a missed notification left behind.
import type { SegmentDefinition } from "@tidings/schema";
import type pg from "pg";
import { changesPendingIn, hasChanges, OUTBOX_CHANNEL, OutboxConsumers } from "../../outbox/index.ts";
import { limit, param, raw, sql } from "../../db/sql.ts";
import { inTransaction } from "../../db/transaction.ts";
import type { JobLayer } from "../../jobs/index.ts";
import { segmentDependencies, type SubscriptionGroupTypes } from "./compile.ts";
import { type DrainOptions, OutboxDrain } from "./drain.ts";
import type { DrainTier } from "./drain-progress.ts";
import { type EnterHook, evaluateSegment, membersQuery, subscriptionGroupTypes } from "./evaluate.ts";
import { StoredSegments } from "./stored.ts";
import { sleep } from "../../lib/time.ts";

export type { DrainTier };

const REFRESH = "segments.refresh";
const TICK = "segments.tick";
/** How long after a refresh that drained rows the outbox is looked at again (see REFRESH). */
const RECHECK_MS = 100;
/** Timers re-evaluated per transaction. */
const TIMER_BATCH = 5000;

export interface SegmentEngineOptions extends DrainOptions {
  jobs: JobLayer;
  /** The engine's clock (ms); tests move it. */
  clock: () => number;
  log?: (msg: string, err?: unknown) => void;
  /** The outbox's consumers besides the engine: each drained batch is handed to them before it is deleted. */
  consumers?: OutboxConsumers;
}

export class SegmentEngine {
  /** Refreshes running in this process, per workspace (each wakes its workspace again at its end if needed). */
  private refreshing = new Map<string, number>();
  /** What records enters besides the engine (recordEntersWith), in each evaluation's statement. */
  private enterHooks: EnterHook[] = [];
  /** Told when an evaluation's enter hooks or the outbox's consumers recorded something for a workspace. */
  private recordedListeners: ((workspaceId: string) => void)[] = [];
  /** The segments evaluated, read with their definitions parsed. */
  private stored: StoredSegments;
  /** Drains the outbox (drain.ts). */
  private drain: OutboxDrain;

  constructor(private options: SegmentEngineOptions) {
    this.stored = new StoredSegments(options.pool, () => this.now(), options.log);
    this.drain = new OutboxDrain(options, this.stored, {
      consumers: options.consumers ?? new OutboxConsumers(),
      enterHooks: this.enterHooks,
      recorded: (workspaceId) => this.recorded(workspaceId),
      now: () => this.now(),
    });
  }

  /** Registers the engine's jobs and wake-ups on the job layer (they run in worker processes). */
  register() {
    const { jobs } = this.options;
    jobs.register(REFRESH, async (payload: { workspaceId: string }) => {
      if (!(await this.refresh(payload.workspaceId))) return;
      // Ingestion wakes the engine only when the outbox was empty (src/outbox): a commit that saw
      // the last rows of this refresh before it deleted them did not notify, and may commit just
      // after the check at the end of the refresh. Look once more when it has (the 1 s tick is
      // the backstop).
      await sleep(RECHECK_MS);
      await this.wakeIfPending(payload.workspaceId);
    });
    const wakeAll = async () => {
      for (const workspaceId of await this.workspacesWithWork()) await this.wake(workspaceId);
    };
    jobs.register(TICK, wakeAll);
    jobs.recurring(TICK, 1);
    jobs.listen(
      OUTBOX_CHANNEL,
      (workspaceId) => {
        // A refresh running here checks the outbox once it is done: no job is needed (under load,
        // that saves a job insert per ingestion commit).
        if (this.refreshing.has(workspaceId)) return;
        void this.wake(workspaceId).catch((err) => this.options.log?.("segments: could not enqueue a refresh", err));
      },
      // Back from a lost connection (a database restart): the outbox filled while no refresh
      // could drain it, so ingestion's commits stopped notifying (src/outbox). Wake those
      // workspaces now rather than at the next tick.
      { resumed: wakeAll },
    );
  }

  /**
   * Has every evaluation record its enters with `hook` too (in its statement), and tells
   * `recorded` of each workspace for which a hook, or an outbox consumer, recorded something.
   * Call before the job layer starts (the composition root wires it once).
   */
  recordEntersWith(hook: EnterHook, recorded: (workspaceId: string) => void) {
    this.enterHooks.push(hook);
    this.recordedListeners.push(recorded);
  }

  private recorded(workspaceId: string) {
    for (const listener of this.recordedListeners) listener(workspaceId);
  }

  /** Enqueues the workspace's refresh (one pending at a time; a running one is followed by another). */
  wake(workspaceId: string) {
    return this.options.jobs.add(REFRESH, { workspaceId }, { key: `segments:${workspaceId}` });
  }

  /**
   * Applies everything pending for the workspace now: recomputes, the outbox, due timers. Only
   * one refresh of a workspace runs at a time (a session advisory lock, which PostgreSQL frees if
   * the process dies); a refresh finding it taken returns at once, and the holder, once it lets
   * go, wakes the workspace again if changes arrived meanwhile. True when it drained outbox rows.
   */
  async refresh(workspaceId: string, wait = false): Promise<boolean> {
    this.refreshing.set(workspaceId, (this.refreshing.get(workspaceId) ?? 0) + 1);
    let ran: { value: boolean } | null;
    try {
      ran = await this.underLock(workspaceId, wait, async (client) => {
        await this.recomputePending(client, workspaceId);
        const drained = await this.drain.run(client, workspaceId);
        while (await this.fireTimers(client, workspaceId)) {}
        return drained;
      });
    } finally {
      const left = this.refreshing.get(workspaceId)! - 1;
      if (left === 0) this.refreshing.delete(workspaceId);
      else this.refreshing.set(workspaceId, left);
    }
    if (!ran) return false;
    // Changes that arrived meanwhile (their notifications were skipped, or a refresh that found
    // the lock taken returned) are ours to wake. Notifications from now on wake it themselves.
    await this.wakeIfPending(workspaceId);
    return ran.value;
  }

  /**
   * Runs `fn` holding the workspace's refresh lock (a session advisory lock, which PostgreSQL frees
   * if the process dies), waiting for it or, without `wait`, not at all (null). A connection that
   * could not unlock (the database went away) is dropped, not pooled: its session, and the lock
   * with it, ends. `fn`'s own error, if any, is the one thrown.
   */
  private async underLock<T>(workspaceId: string, wait: boolean, fn: (db: pg.PoolClient) => Promise<T>): Promise<{ value: T } | null> {
    const lock = `segments:${workspaceId}`;
    const client = await this.options.pool.connect();
    let locked = false;
    try {
      if (wait) {
        await client.query(sql`SELECT pg_advisory_lock(hashtextextended(${lock}, 0))`);
        locked = true;
      } else {
        const { rows } = await client.query<{ ok: boolean }>(sql`SELECT pg_try_advisory_lock(hashtextextended(${lock}, 0)) AS ok`);
        locked = rows[0]!.ok;
      }
      return locked ? { value: await fn(client) } : null;
    } finally {
      const unlockFailed = locked
        ? await client.query(sql`SELECT pg_advisory_unlock(hashtextextended(${lock}, 0))`).then(
            () => undefined,
            (err: Error) => err,
          )
        : undefined;
      client.release(unlockFailed);
    }
  }

  private async wakeIfPending(workspaceId: string) {
    if (await hasChanges(this.options.pool, workspaceId)) await this.wake(workspaceId);
  }

  /**
   * Runs `fn` while no refresh of the workspace runs (holding the refresh's lock, waiting for it):
   * every evaluation begun before has committed, and none begins until `fn` returns.
   */
  async exclusive<T>(workspaceId: string, fn: (db: pg.PoolClient) => Promise<T>): Promise<T> {
    const { value } = (await this.underLock(workspaceId, true, fn))!;
    // Refreshes that found the lock taken returned: what they left is ours to wake.
    await this.wakeIfPending(workspaceId);
    return value;
  }

  /** Applies everything pending at the engine's clock, waiting for a running refresh first (tests, CLI waits). */
  async settle(workspaceId: string) {
    await this.refresh(workspaceId, true);
  }

  /** Recomputes every segment of the workspace from scratch. */
  async recomputeAll(workspaceId: string) {
    await this.options.pool.query(sql`UPDATE segments SET last_recomputed = NULL WHERE workspace_id = ${workspaceId}`);
    await this.settle(workspaceId);
  }

  /** The members of a definition now (a broadcast's inline audience), as a query to select from. */
  async membersOf(workspaceId: string, definition: SegmentDefinition, seed: string) {
    const groups = await this.groupTypes(this.options.pool, workspaceId);
    return membersQuery(definition, groups, workspaceId, seed, this.now());
  }

  private now() {
    return new Date(this.options.clock());
  }

  /**
   * The workspaces the tick wakes: with outbox rows, due timers, or definitions to recompute (a
   * failing one only once its retry is due: StoredSegments).
   */
  async workspacesWithWork(): Promise<string[]> {
    const now = param(this.now());
    const { rows } = await this.options.pool.query<{ id: string }>(
      sql`SELECT w.id FROM workspaces w WHERE
        ${changesPendingIn(raw("w.id"))}
        OR EXISTS (SELECT 1 FROM segment_timers t WHERE t.workspace_id = w.id AND t.due_at <= ${now})
        OR EXISTS (SELECT 1 FROM segments s WHERE s.workspace_id = w.id
          AND (s.last_recomputed IS NULL OR s.last_recomputed < s.definition_updated_at OR s.evaluation_error IS NOT NULL)
          AND (s.evaluation_retry_at IS NULL OR s.evaluation_retry_at <= ${now}))`,
    );
    return rows.map((r) => r.id);
  }

  private groupTypes(db: Pick<pg.Pool, "query">, workspaceId: string): Promise<SubscriptionGroupTypes> {
    return subscriptionGroupTypes(db, workspaceId);
  }

  private async recomputePending(db: pg.PoolClient, workspaceId: string) {
    const pending = await this.stored.pendingRecompute(db, workspaceId);
    if (pending.length === 0) return;
    const groups = await this.groupTypes(db, workspaceId);
    let signalled = 0;
    for (const s of pending) {
      const evaluated = await this.stored.isolated(db, workspaceId, s, () =>
        inTransaction(db, async () => {
          // Hashes and sorts over a whole workspace stay in memory.
          await db.query("SET LOCAL work_mem = '64MB'");
          return evaluateSegment(db, { workspaceId, id: s.id, definition: s.definition }, groups, this.now(), null, {
            enterHooks: this.enterHooks,
            full: { definitionUpdatedAt: s.definition_updated_at, dependsOn: segmentDependencies(s.definition) },
          });
        }),
      );
      signalled += evaluated?.signals ?? 0;
    }
    if (signalled > 0) this.recorded(workspaceId);
  }

  /** Re-evaluates one batch of due timers; false when none is due. */
  private async fireTimers(db: pg.PoolClient, workspaceId: string): Promise<boolean> {
    const now = this.now();
    return inTransaction(db, async () => {
      const { rows } = await db.query<{ segment_id: string; ids: string[] }>(
        sql`SELECT segment_id, array_agg(profile_id) AS ids FROM (
           SELECT segment_id, profile_id FROM segment_timers WHERE workspace_id = ${workspaceId} AND due_at <= ${now}
           ORDER BY due_at ${limit(TIMER_BATCH)}) due
         GROUP BY segment_id`,
      );
      const segments = new Map((await this.stored.read(db, workspaceId)).map((s) => [s.id, s]));
      const groups = rows.length ? await this.groupTypes(db, workspaceId) : new Map();
      let fired = 0;
      let signalled = 0;
      for (const r of rows) {
        fired += r.ids.length;
        const s = segments.get(r.segment_id);
        if (s) {
          const segment = { workspaceId, id: s.id, definition: s.definition };
          const evaluate = () => evaluateSegment(db, segment, groups, now, r.ids, { enterHooks: this.enterHooks });
          signalled += (await this.stored.isolated(db, workspaceId, s, evaluate, true))?.signals ?? 0;
        }
        // A timer whose evaluation sets the same instant again would fire forever.
        await db.query(
          sql`DELETE FROM segment_timers WHERE workspace_id = ${workspaceId} AND segment_id = ${r.segment_id} AND profile_id = ANY(${r.ids}) AND due_at <= ${now}`,
        );
      }
      if (signalled > 0) this.recorded(workspaceId);
      return fired === TIMER_BATCH;
    });
  }
}
