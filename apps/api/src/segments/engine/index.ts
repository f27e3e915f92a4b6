// The segment engine: keeps every segment's membership current (docs/segments.md).
//
// Work arrives three ways, all durable in PostgreSQL: outbox rows written in the commit of a
// change (ingestion, assignments, manual members, deletions), segments whose definition is newer
// than their last recompute, and timers whose instant has come. One job per workspace,
// `segments.refresh`, applies all three, under a per-workspace advisory lock, so no two
// refreshes of a workspace ever overlap (within one, the segments reading events and the others
// drain the outbox apart, at once: DrainTier). Workers wake it
// on the outbox's NOTIFY, and every workspace with work when their LISTEN connection comes back;
// a job every second wakes it for timers, recomputes and anything a missed notification left behind.
import type { SegmentDefinition } from "@tidings/schema";
import { setTimeout as sleep } from "node:timers/promises";
import type pg from "pg";
import { OUTBOX_CHANNEL, type OutboxHandOff, outboxKey } from "../../outbox/index.ts";
import { inTransaction } from "../../db/transaction.ts";
import type { JobLayer } from "../../jobs/index.ts";
import { segmentDependencies, type SubscriptionGroupTypes } from "./compile.ts";
import type { ScopeEvents } from "./compile-nodes.ts";
import { evaluateSegment, membersQuery, subscriptionGroupTypes } from "./evaluate.ts";
import { batchScopes, narrowScope } from "./scope.ts";
import { type EventsRead, evaluationUnits, eventsRead, withScopeEvents } from "./scope-events.ts";
import { DrainProgress, type DrainedRow, type DrainTier } from "./drain-progress.ts";
import { type StoredSegment, StoredSegments } from "./stored.ts";

export type { DrainTier };

const REFRESH = "segments.refresh";
const TICK = "segments.tick";
/** Outbox rows drained per pass, and per pass under heavy ingestion (bounded: a backlog after a
 * worker outage is drained in passes, never read into one result). */
const OUTBOX_READ = { batch: 500, heavy: 2000 };
/** Connections evaluating a drained batch's segments reading events at once. */
const LANES = 2;
/**
 * How often the segments reading no events take what arrived while those reading events drain
 * (ms): each pass costs a statement per segment whatever its size, so passes back to back would
 * take CPU from the other tier (measured: its changes then lagged about twice as long). Every
 * 500 ms rather than 250: under bench (c)'s heavy ingestion, ingestion kept 0.48 instead of 0.42
 * of its rate (counting catch-up; four interleaved runs each), with no clear change to (e)'s
 * freshness of a trait segment.
 */
const PROFILES_PERIOD_MS = 500;
/**
 * For how long a refresh goes on taking what arrived during its last pass (ms), before it ends
 * so that due timers and recomputes run (a pass reading a full batch is always followed by another).
 */
const PASSES_MS = 1000;
/** How long after a refresh that drained rows the outbox is looked at again (see REFRESH). */
const RECHECK_MS = 100;
/** Timers re-evaluated per transaction. */
const TIMER_BATCH = 5000;

/** A segment of a drain and the users it is evaluated for. */
type Work = { s: StoredSegment; ids: string[]; reads: EventsRead | null };

export interface SegmentEngineOptions {
  pool: pg.Pool;
  jobs: JobLayer;
  /** The engine's clock (ms); tests move it. */
  clock: () => number;
  log?: (msg: string, err?: unknown) => void;
  /**
   * A drained batch touching at least `min` users and at least `share` of the workspace's users
   * means heavy ingestion: the drain then takes up to `outboxRead.heavy` waiting outbox rows in
   * one pass (their users are mostly the same). Default { min: 2000, share: 0.5 }.
   */
  heavyIngestion?: { min: number; share: number };
  /** Outbox rows read per pass, normally and under heavy ingestion (tests make them small). */
  outboxRead?: { batch: number; heavy: number };
  /** Observes each drained pass of a tier: the outbox rows it read and the users it evaluated. */
  onDrain?: (rows: number, users: number, tier: DrainTier) => void;
  /** Observes how long each drained change waited: from its commit to its segments being current (s). */
  lag?: (seconds: number) => void;
  /** Called after an evaluation recorded enters of segments a journey uses (their users are in journey_signals). */
  onSignals?: (workspaceId: string) => void;
}

export class SegmentEngine {
  /** Refreshes running in this process, per workspace (each wakes its workspace again at its end if needed). */
  private refreshing = new Map<string, number>();
  /** The outbox's other consumers (src/outbox): each drained batch is handed to them before it is deleted. */
  private handOffs: OutboxHandOff[] = [];
  /** The segments evaluated, read with their definitions parsed. */
  private stored: StoredSegments;
  /** What each workspace's refreshes in this process drained in one tier and not yet the other. */
  private progress = new Map<string, DrainProgress>();

  constructor(private options: SegmentEngineOptions) {
    this.stored = new StoredSegments(options.log);
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

  /** Adds a consumer of drained outbox rows, called in the transaction that deletes them. */
  addHandOff(handOff: OutboxHandOff) {
    this.handOffs.push(handOff);
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
        const drained = await this.drainOutbox(client, workspaceId);
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
        await client.query("SELECT pg_advisory_lock(hashtextextended($1, 0))", [lock]);
        locked = true;
      } else {
        const { rows } = await client.query<{ ok: boolean }>("SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS ok", [lock]);
        locked = rows[0]!.ok;
      }
      return locked ? { value: await fn(client) } : null;
    } finally {
      const unlockFailed = locked
        ? await client.query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [lock]).then(
            () => undefined,
            (err: Error) => err,
          )
        : undefined;
      client.release(unlockFailed);
    }
  }

  private async wakeIfPending(workspaceId: string) {
    const { rows } = await this.options.pool.query<{ pending: boolean }>(
      "SELECT EXISTS (SELECT 1 FROM segment_outbox WHERE workspace_id = $1) AS pending",
      [workspaceId],
    );
    if (rows[0]!.pending) await this.wake(workspaceId);
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
    await this.options.pool.query("UPDATE segments SET last_recomputed = NULL WHERE workspace_id = $1", [workspaceId]);
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

  private async workspacesWithWork(): Promise<string[]> {
    const { rows } = await this.options.pool.query<{ id: string }>(
      `SELECT w.id FROM workspaces w WHERE
        EXISTS (SELECT 1 FROM segment_outbox o WHERE o.workspace_id = w.id)
        OR EXISTS (SELECT 1 FROM segment_timers t WHERE t.workspace_id = w.id AND t.due_at <= $1)
        OR EXISTS (SELECT 1 FROM segments s WHERE s.workspace_id = w.id
          AND (s.last_recomputed IS NULL OR s.last_recomputed < s.definition_updated_at))`,
      [this.now()],
    );
    return rows.map((r) => r.id);
  }

  private groupTypes(db: Pick<pg.Pool, "query">, workspaceId: string): Promise<SubscriptionGroupTypes> {
    return subscriptionGroupTypes(db, workspaceId);
  }

  private async recomputePending(db: pg.PoolClient, workspaceId: string) {
    const pending = await this.stored.read(db, workspaceId, "(last_recomputed IS NULL OR last_recomputed < definition_updated_at)");
    if (pending.length === 0) return;
    const groups = await this.groupTypes(db, workspaceId);
    let signalled = 0;
    for (const s of pending) {
      await inTransaction(db, async () => {
        // Hashes and sorts over a whole workspace stay in memory.
        await db.query("SET LOCAL work_mem = '64MB'");
        const { signals } = await evaluateSegment(db, { workspaceId, id: s.id, definition: s.definition }, groups, this.now(), null, {
          full: { definitionUpdatedAt: s.definition_updated_at, dependsOn: segmentDependencies(s.definition) },
        });
        signalled += signals;
      });
    }
    if (signalled > 0) this.options.onSignals?.(workspaceId);
  }

  /**
   * Drains the outbox in its two tiers at once (DrainTier): the segments reading events on `db`
   * (and a lane of the pool), in passes until one reads nothing, or fewer rows than it may once
   * PASSES_MS have gone by; meanwhile the segments reading no events, in short passes over
   * whatever arrived (every PROFILES_PERIOD_MS), until the other tier is done and a pass of theirs
   * reads fewer rows than it may. Each tier skips the rows it applied; a row is deleted once both
   * did (one arriving as the events tier ends is the next refresh's). A failure in either stops
   * both. True when it drained outbox rows.
   */
  private async drainOutbox(db: pg.PoolClient, workspaceId: string): Promise<boolean> {
    const progress = this.progress.get(workspaceId) ?? new DrainProgress();
    this.progress.delete(workspaceId);
    const drainedBefore = progress.drained;
    let failed = false;
    const stopsBoth = (err: unknown) => {
      failed = true;
      throw err;
    };
    const began = Date.now();
    const events = (async () => {
      for (let more = true; more && !failed; ) {
        const { read, full } = await this.drainPass(db, workspaceId, "events", progress);
        more = full || (read > 0 && Date.now() - began < PASSES_MS);
      }
    })().catch(stopsBoth);
    let eventsDone = false;
    const eventsOver = events.then(
      () => {
        eventsDone = true;
      },
      () => {
        eventsDone = true;
      },
    );
    // Each pass on a connection of the pool, held for that pass only: a refresh holds one
    // connection throughout (its lock's), and others only while they work, never waiting for one
    // while holding another besides it.
    const profilesPass = async () => {
      const connection = await this.options.pool.connect();
      try {
        const pass = await this.drainPass(connection, workspaceId, "profiles", progress);
        connection.release();
        return pass;
      } catch (err) {
        connection.release(err as Error);
        throw err;
      }
    };
    const profiles = (async () => {
      for (;;) {
        const last = eventsDone;
        const started = Date.now();
        const { full } = await profilesPass();
        if (failed || (last && !full)) return;
        if (!last) await Promise.race([eventsOver, sleep(started + PROFILES_PERIOD_MS - Date.now())]);
      }
    })().catch(stopsBoth);
    const failure = (await Promise.allSettled([events, profiles])).find((o) => o.status === "rejected");
    if (await progress.prune(db, workspaceId).catch(() => false)) this.progress.set(workspaceId, progress);
    if (failure) throw failure.reason;
    return progress.drained > drainedBefore;
  }

  /**
   * Applies one batch of outbox rows to the segments of `tier`: how many it read, and whether it
   * read a full batch (more may wait). Each affected segment's evaluation is its own statement,
   * committed at once (a change is visible without waiting for the other segments); the rows are
   * deleted once both tiers applied them, so a crash in between only repeats evaluations, which
   * are idempotent.
   */
  private async drainPass(
    db: pg.PoolClient,
    workspaceId: string,
    tier: DrainTier,
    progress: DrainProgress,
  ): Promise<{ read: number; full: boolean }> {
    const read = (limit: string) =>
      db.query<DrainedRow>(
        `SELECT id, ids, keys, coalesce(track_ids, '{}') AS track_ids, created_at FROM segment_outbox
         WHERE workspace_id = $1 AND NOT (id = ANY($2::bigint[])) ORDER BY id ${limit}`,
        [workspaceId, progress.doneBy(tier)],
      );
    const bound = this.options.outboxRead ?? OUTBOX_READ;
    let limit = bound.batch;
    let { rows } = await read(`LIMIT ${limit}`);
    if (rows.length === 0) return { read: 0, full: false };
    // The tier's segments whose dependencies the rows' keys meet.
    const segmentsOf = async (batch: DrainedRow[]) => {
      const keys = [...new Set(batch.flatMap((r) => r.keys))];
      const affected = keys.includes(outboxKey.any)
        ? await this.stored.read(db, workspaceId)
        : await this.stored.read(
            db,
            workspaceId,
            "(depends_on && $2::text[] OR '*' = ANY(depends_on) OR coalesce(cardinality(depends_on), 0) = 0)",
            [keys],
          );
      return affected.flatMap((s) => {
        const reads = eventsRead(s.definition);
        return (reads === null) === (tier === "profiles") ? [{ s, reads }] : [];
      });
    };
    let affected = await segmentsOf(rows);
    // More rows can wait only behind a full read (otherwise this pass already holds every one).
    // Its users are counted as sent: only the batch the pass takes is resolved (resolveScope).
    const touched = new Set(rows.flatMap((r) => r.ids)).size;
    if (affected.length > 0 && rows.length === limit && bound.heavy > limit && (await this.heavyIngestion(db, workspaceId, touched))) {
      // Heavy ingestion: the next batches would touch the same users again. One pass over many
      // waiting rows (each user evaluated once, whatever its number of events) costs about what
      // one batch does.
      limit = bound.heavy;
      rows = (await read(`LIMIT ${limit}`)).rows;
      affected = await segmentsOf(rows);
    }
    const scope = affected.length > 0 ? await this.resolveScope(db, workspaceId, rows) : null;
    let signalled = 0;
    if (scope) {
      const groups = await this.groupTypes(db, workspaceId);
      const evaluate = async (lane: pg.PoolClient, w: Work, events?: ScopeEvents) => {
        const segment = { workspaceId, id: w.s.id, definition: w.s.definition };
        const options = { events, memberCount: w.s.member_count };
        signalled += (await evaluateSegment(lane, segment, groups, this.now(), w.ids, options)).signals;
      };
      const candidates = affected
        .map(({ s, reads }) => {
          const of = scope.of(s);
          return { s, of, reads, ids: [...of.all, ...of.enter, ...of.exit] };
        })
        .filter((c) => c.ids.length > 0);
      const narrowed = async (lane: pg.PoolClient, c: (typeof candidates)[number]) =>
        narrowScope(lane, workspaceId, { id: c.s.id, memberCount: c.s.member_count }, c.of);
      if (tier === "profiles") {
        for (const c of candidates) {
          const ids = await narrowed(db, c);
          if (ids.length > 0) await evaluate(db, { s: c.s, ids, reads: null });
        }
      } else {
        // Segments that may share a copy of the events (by their scopes before narrowing) are
        // narrowed and evaluated together, in one lane.
        await this.inLanes(db, LANES, evaluationUnits(candidates), async (lane, together) => {
          const work: Work[] = [];
          for (const c of together) {
            const ids = await narrowed(lane, c);
            if (ids.length > 0) work.push({ s: c.s, ids, reads: c.reads });
          }
          for (const unit of evaluationUnits(work)) {
            if (unit.length === 1) {
              await evaluate(lane, unit[0]!);
              continue;
            }
            const ids = [...new Set(unit.flatMap((w) => w.ids))];
            await withScopeEvents(
              lane,
              workspaceId,
              ids,
              unit.flatMap((w) => w.reads ?? []),
              async (table) => {
                // A segment evaluated for every profile of the copy reads all of it.
                for (const w of unit) await evaluate(lane, w, { table, exact: w.ids.length === ids.length });
              },
            );
          }
        });
      }
    }
    const done = progress.mark(tier, rows);
    if (done.length > 0) {
      signalled += await this.removeDrained(db, workspaceId, done);
      progress.removed(done);
    }
    if (signalled > 0) this.options.onSignals?.(workspaceId);
    this.options.onDrain?.(rows.length, scope?.users ?? 0, tier);
    return { read: rows.length, full: rows.length === limit };
  }

  /**
   * Deletes outbox rows both tiers applied, having handed them to the outbox's other consumers in
   * the same transaction: the signals those recorded. Each row's age as it goes is the engine's
   * lag (the change's segments are current now).
   */
  private async removeDrained(db: pg.PoolClient, workspaceId: string, rows: DrainedRow[]): Promise<number> {
    let signalled = 0;
    const remove = async () =>
      (
        await db.query<{ age: number }>(
          `DELETE FROM segment_outbox WHERE workspace_id = $1 AND id = ANY($2::bigint[])
           RETURNING extract(epoch FROM clock_timestamp() - created_at)::float8 AS age`,
          [workspaceId, rows.map((r) => r.id)],
        )
      ).rows;
    const removed =
      this.handOffs.length === 0
        ? await remove()
        : await inTransaction(db, async () => {
            for (const handOff of this.handOffs) signalled += await handOff(db, workspaceId, rows);
            return remove();
          });
    if (this.options.lag) for (const r of removed) this.options.lag(r.age);
    return signalled;
  }

  /**
   * Runs `fn` over `items` on `lanes` connections at once: `db` and pool connections (statements on
   * different segments touch different rows, so they never wait for one another).
   */
  private async inLanes<T>(db: pg.PoolClient, lanes: number, items: T[], fn: (lane: pg.PoolClient, item: T) => Promise<unknown>) {
    const connecting =
      items.length > 1 ? await Promise.allSettled(Array.from({ length: lanes - 1 }, () => this.options.pool.connect())) : [];
    const extra = connecting.flatMap((c) => (c.status === "fulfilled" ? [c.value] : []));
    const refused = connecting.find((c) => c.status === "rejected");
    if (refused) {
      for (const c of extra) c.release();
      throw refused.reason;
    }
    // The first failure stops every lane before any connection goes back to the pool: a lane
    // still running would issue statements on a connection someone else may hold by then.
    let next = 0;
    let failed = false;
    const outcomes = await Promise.allSettled(
      [db, ...extra].map(async (lane) => {
        try {
          while (!failed && next < items.length) await fn(lane, items[next++]!);
        } catch (err) {
          failed = true;
          throw err;
        }
      }),
    );
    // A lane that failed drops its connection (it may be broken); the others go back to the pool.
    for (const [i, c] of extra.entries()) c.release(outcomes[i + 1]!.status === "rejected");
    const failure = outcomes.find((o) => o.status === "rejected");
    if (failure) throw failure.reason;
  }

  private async heavyIngestion(db: pg.PoolClient, workspaceId: string, ids: number) {
    const { min, share } = this.options.heavyIngestion ?? { min: 2000, share: 0.5 };
    if (ids < min) return false;
    const { rows } = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM profiles WHERE workspace_id = $1", [workspaceId]);
    return ids >= share * rows[0]!.n;
  }

  /**
   * The users of a drained batch (`users` counts them), and each segment's scope in it
   * (scope.ts). Each row's ids are taken as sent and with the profiles they belong to now (a
   * linked id's old memberships leave). A segment that could hold for a user with no data at all
   * (it depends on `*`: Everyone, RandomBucket, `Performed … < n`, `Not`) changes for a profile
   * that existed before only through its other keys or a `*` change; it also takes the profiles
   * the batch created (their `created_at` is the transaction's, as is their outbox row's).
   */
  private async resolveScope(db: pg.PoolClient, workspaceId: string, batch: DrainedRow[]) {
    const ids = [...new Set(batch.flatMap((r) => r.ids))];
    const since = new Date(Math.min(...batch.map((r) => r.created_at.getTime())));
    const { rows } = await db.query<{ x: string; id: string | null; created: boolean }>(
      `SELECT x, a.profile_id AS id, coalesce(p.created_at >= $3, false) AS created FROM unnest($2::text[]) x
       LEFT JOIN profile_aliases a ON a.workspace_id = $1 AND a.alias_id = x AND a.profile_id <> x
       LEFT JOIN profiles p ON p.workspace_id = $1 AND p.profile_id = coalesce(a.profile_id, x)
       WHERE a.profile_id IS NOT NULL OR p.created_at >= $3`,
      [workspaceId, ids, since],
    );
    const profileOf = new Map(rows.flatMap((r) => (r.id === null ? [] : [[r.x, r.id] as const])));
    const resolved =
      profileOf.size === 0
        ? batch
        : batch.map((r) => ({ keys: r.keys, ids: r.ids.flatMap((x) => (profileOf.has(x) ? [x, profileOf.get(x)!] : [x])) }));
    const all = profileOf.size === 0 ? ids : [...new Set(resolved.flatMap((r) => r.ids))];
    const created = rows.filter((r) => r.created).flatMap((r) => (r.id === null ? [r.x] : [r.x, r.id]));
    const scopes = batchScopes(resolved, created, all);
    return {
      users: all.length,
      of: (s: StoredSegment) => scopes(s.definition, s.depends_on ?? []),
    };
  }

  /** Re-evaluates one batch of due timers; false when none is due. */
  private async fireTimers(db: pg.PoolClient, workspaceId: string): Promise<boolean> {
    const now = this.now();
    return inTransaction(db, async () => {
      const { rows } = await db.query<{ segment_id: string; ids: string[] }>(
        `SELECT segment_id, array_agg(profile_id) AS ids FROM (
           SELECT segment_id, profile_id FROM segment_timers WHERE workspace_id = $1 AND due_at <= $2
           ORDER BY due_at LIMIT ${TIMER_BATCH}) due
         GROUP BY segment_id`,
        [workspaceId, now],
      );
      const segments = new Map((await this.stored.read(db, workspaceId)).map((s) => [s.id, s]));
      const groups = rows.length ? await this.groupTypes(db, workspaceId) : new Map();
      let fired = 0;
      let signalled = 0;
      for (const r of rows) {
        fired += r.ids.length;
        const s = segments.get(r.segment_id);
        if (s) signalled += (await evaluateSegment(db, { workspaceId, id: s.id, definition: s.definition }, groups, now, r.ids)).signals;
        // A timer whose evaluation sets the same instant again would fire forever.
        await db.query("DELETE FROM segment_timers WHERE workspace_id = $1 AND segment_id = $2 AND profile_id = ANY($3) AND due_at <= $4", [
          workspaceId,
          r.segment_id,
          r.ids,
          now,
        ]);
      }
      if (signalled > 0) this.options.onSignals?.(workspaceId);
      return fired === TIMER_BATCH;
    });
  }
}
