// Draining the segment outbox (docs/segments.md): a refresh's passes over the outbox rows waiting
// for a workspace, in two tiers at once (DrainTier), each pass evaluating the segments its rows'
// keys meet for the users they touched (scope.ts), over a copy of their events where several
// segments read the same ones (scope-events.ts), and deleting the rows once both tiers applied
// them, having handed them to the outbox's other consumers.
import type pg from "pg";
import { type OutboxConsumers, outboxKey, readChanges, removeChanges } from "../../outbox/index.ts";
import { sql } from "../../db/sql.ts";
import { inTransaction } from "../../db/transaction.ts";
import type { ScopeCopy } from "./compile-nodes.ts";
import { DrainProgress, type DrainedRow, type DrainTier } from "./drain-progress.ts";
import { type EnterHook, evaluateSegment, subscriptionGroupTypes } from "./evaluate.ts";
import { type BatchScope, resolveScope } from "./drain-scope.ts";
import { inLanes } from "./lanes.ts";
import { narrowScope } from "./scope.ts";
import { type EventsRead, evaluateUnit, evaluationUnits, eventsRead } from "./scope-events.ts";
import type { StoredSegment, StoredSegments } from "./stored.ts";
import { sleep } from "../../lib/time.ts";

/** Outbox rows drained per pass, and per pass under heavy ingestion (bounded: a backlog after a
 * worker outage is drained in passes, never read into one result). */
const OUTBOX_READ = { batch: 500, heavy: 2000 };
/** Connections evaluating a drained batch's segments reading events at once. */
const LANES = 2;
/**
 * How often the segments reading no events take what arrived while those reading events drain
 * (ms): passes back to back would take CPU from the other tier (figures: docs/scaling.md, "Measurements behind the code").
 */
const PROFILES_PERIOD_MS = 250;
/**
 * For how long a refresh goes on taking what arrived during its last pass (ms), before it ends
 * so that due timers and recomputes run (a pass reading a full batch is always followed by another).
 */
const PASSES_MS = 1000;

/** A segment of a drain and the users it is evaluated for. */
type Work = { s: StoredSegment; ids: string[]; reads: EventsRead | null };
/** A segment affected by a drained batch, with the events it reads (null: none). */
type Affected = { s: StoredSegment; reads: EventsRead | null };

/** The engine's settings a drain reads. */
export interface DrainOptions {
  pool: pg.Pool;
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
}

/** What a drain shares with its engine. */
interface DrainLinks {
  /** The outbox's consumers besides the engine, called in the transaction that deletes drained rows. */
  consumers: OutboxConsumers;
  /** The engine's enter hooks (SegmentEngine.recordEntersWith). */
  enterHooks: readonly EnterHook[];
  /** Something was recorded for the workspace (by a hook or a consumer). */
  recorded: (workspaceId: string) => void;
  now: () => Date;
}

/** A process's drains of the outbox, for the refreshes of every workspace (one at a time per workspace: SegmentEngine.refresh). */
export class OutboxDrain {
  /** What each workspace's refreshes in this process drained in one tier and not yet the other. */
  private progress = new Map<string, DrainProgress>();

  constructor(
    private options: DrainOptions,
    private stored: StoredSegments,
    private links: DrainLinks,
  ) {}

  private now() {
    return this.links.now();
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
  async run(db: pg.PoolClient, workspaceId: string): Promise<boolean> {
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
        const { read, full } = await this.pass(db, workspaceId, "events", progress);
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
        const pass = await this.pass(connection, workspaceId, "profiles", progress);
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
  private async pass(
    db: pg.PoolClient,
    workspaceId: string,
    tier: DrainTier,
    progress: DrainProgress,
  ): Promise<{ read: number; full: boolean }> {
    const batch = await this.readBatch(db, workspaceId, tier, progress);
    if (!batch) return { read: 0, full: false };
    const { rows, affected, size } = batch;
    const scope = affected.length > 0 ? await resolveScope(db, workspaceId, rows, progress) : null;
    let signalled = scope ? await this.evaluate(db, workspaceId, tier, affected, scope) : 0;
    const done = progress.mark(tier, rows);
    if (done.length > 0) {
      signalled += await this.removeDrained(db, workspaceId, done);
      progress.removed(done);
    }
    if (signalled > 0) this.links.recorded(workspaceId);
    this.options.onDrain?.(rows.length, scope?.users ?? 0, tier);
    return { read: rows.length, full: rows.length === size };
  }

  /** The tier's next rows and the segments they affect (null when none waits); a larger read under heavy ingestion. */
  private async readBatch(db: pg.PoolClient, workspaceId: string, tier: DrainTier, progress: DrainProgress) {
    const read = (n: number) => readChanges(db, workspaceId, progress.doneBy(tier), n);
    const bound = this.options.outboxRead ?? OUTBOX_READ;
    let size = bound.batch;
    let rows = await read(size);
    if (rows.length === 0) return null;
    let affected = await this.affectedSegments(db, workspaceId, tier, rows);
    // More rows can wait only behind a full read (otherwise this pass already holds every one).
    if (affected.length > 0 && rows.length === size && bound.heavy > size && (await this.heavyIngestion(db, workspaceId, rows))) {
      // Heavy ingestion: the next batches would touch the same users again. One pass over many
      // waiting rows (each user evaluated once, whatever its number of events) costs about what
      // one batch does.
      size = bound.heavy;
      rows = await read(size);
      affected = await this.affectedSegments(db, workspaceId, tier, rows);
    }
    return { rows, affected, size };
  }

  /** The tier's segments whose dependencies the rows' keys meet, with the events each reads. */
  private async affectedSegments(db: pg.PoolClient, workspaceId: string, tier: DrainTier, batch: DrainedRow[]): Promise<Affected[]> {
    const keys = [...new Set(batch.flatMap((r) => r.keys))];
    const affected = keys.includes(outboxKey.any)
      ? await this.stored.read(db, workspaceId)
      : await this.stored.read(
          db,
          workspaceId,
          sql`(depends_on && ${keys}::text[] OR '*' = ANY(depends_on) OR coalesce(cardinality(depends_on), 0) = 0)`,
        );
    return affected.flatMap((s) => {
      const reads = eventsRead(s.definition);
      return (reads === null) === (tier === "profiles") ? [{ s, reads }] : [];
    });
  }

  /** Evaluates the affected segments for the users of their scope: the signals recorded. */
  private async evaluate(db: pg.PoolClient, workspaceId: string, tier: DrainTier, affected: Affected[], scope: BatchScope) {
    const groups = await subscriptionGroupTypes(db, workspaceId);
    let signalled = 0;
    const evaluate = async (lane: pg.PoolClient, w: Work, copy?: ScopeCopy) => {
      const segment = { workspaceId, id: w.s.id, definition: w.s.definition };
      const options = { copy, memberCount: w.s.member_count, enterHooks: this.links.enterHooks };
      const evaluated = await this.stored.isolated(lane, workspaceId, w.s, () =>
        evaluateSegment(lane, segment, groups, this.now(), w.ids, options),
      );
      signalled += evaluated?.signals ?? 0;
    };
    const candidates = affected
      .map(({ s, reads }) => {
        const of = scope.of(s);
        return { s, of, reads, ids: [...of.all, ...of.enter, ...of.exit] };
      })
      .filter((c) => c.ids.length > 0);
    const narrowed = async (lane: pg.PoolClient, c: (typeof candidates)[number]): Promise<Work> => {
      const ids = await narrowScope(lane, workspaceId, { id: c.s.id, memberCount: c.s.member_count }, c.of);
      return { s: c.s, ids, reads: c.reads };
    };
    if (tier === "profiles") {
      for (const c of candidates) {
        const w = await narrowed(db, c);
        if (w.ids.length > 0) await evaluate(db, w);
      }
      return signalled;
    }
    // Segments that may share a copy of the events (by their scopes before narrowing) are
    // narrowed and evaluated together, in one lane.
    await inLanes(this.options.pool, db, LANES, evaluationUnits(candidates), async (lane, together) => {
      const work: Work[] = [];
      for (const c of together) {
        const w = await narrowed(lane, c);
        if (w.ids.length > 0) work.push(w);
      }
      for (const unit of evaluationUnits(work)) await evaluateUnit(lane, workspaceId, unit, evaluate);
    });
    return signalled;
  }

  /**
   * Deletes outbox rows both tiers applied, having handed them to the outbox's other consumers in
   * the same transaction: the signals those recorded. Each row's age as it goes is the engine's
   * lag (the change's segments are current now).
   */
  private async removeDrained(db: pg.PoolClient, workspaceId: string, rows: DrainedRow[]): Promise<number> {
    let signalled = 0;
    const remove = () =>
      removeChanges(
        db,
        workspaceId,
        rows.map((r) => r.id),
      );
    const removed = this.links.consumers.empty
      ? await remove()
      : await inTransaction(db, async () => {
          signalled += await this.links.consumers.handOff(db, workspaceId, rows);
          return remove();
        });
    if (this.options.lag) for (const age of removed) this.options.lag(age);
    return signalled;
  }

  /**
   * Whether a full read's `batch` means heavy ingestion (DrainOptions.heavyIngestion). Its
   * users are counted as sent: only the batch the pass then takes is resolved (resolveScope).
   */
  private async heavyIngestion(db: pg.PoolClient, workspaceId: string, batch: DrainedRow[]) {
    const { min, share } = this.options.heavyIngestion ?? { min: 2000, share: 0.5 };
    const ids = new Set(batch.flatMap((r) => r.ids)).size;
    if (ids < min) return false;
    const { rows } = await db.query<{ n: number }>(sql`SELECT count(*)::int AS n FROM profiles WHERE workspace_id = ${workspaceId}`);
    return ids >= share * rows[0]!.n;
  }
}
