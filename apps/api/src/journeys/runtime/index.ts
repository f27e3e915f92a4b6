// The journey runtime (docs/journeys.md): runs are rows of journey_runs, advanced by workers on
// the job layer. Nothing lives in memory: a run's node, its timer (due_at) and its messages are
// committed together, so any worker of any replica may pick up where another died.
//
// One job per workspace, `journeys.advance`, takes the workspace's signals (entries, wake-ups)
// and then every running journey's due runs, in batches, for a bounded slice; while timers fall
// due within the next second it sleeps until them rather than let go, so a delay ends on time.
// `journeys.tick` runs every second and wakes workspaces with signals or runs due within a
// second (a wake-up lost with a dying process is found there). Jobs may overlap: batches take
// runs with SKIP LOCKED and signals by deleting them.
import { holdsMessages, policiesFor } from "../../policies/index.ts";
import { JourneyDefinition } from "@tidings/schema";
import type pg from "pg";
import { CLEAR_FAILURE, DefinitionError, isDefinitionFault, markFailing } from "../../db/failing.ts";
import { raw, type Sql, sql } from "../../db/sql.ts";
import { addJobQuery, type JobLayer } from "../../jobs/index.ts";
import type { SendJobs } from "../../messaging/index.ts";
import type { SegmentEngine } from "../../segments/index.ts";
import { type AdvanceDeps, advanceBatch, type LiveJourney } from "./advance.ts";
import { dueWorkspacesQuery, nextDueQuery } from "./due.ts";
import { enterMembers, journeySignalsOnEnter, recordEventEntries, takeSignals } from "./entries.ts";
import { errorText } from "../../lib/errors.ts";
import { sleep } from "../../lib/time.ts";
import type { OutboxConsumers } from "../../outbox/index.ts";

const ADVANCE = "journeys.advance";
const ENTER = "journeys.enter";
const TICK = "journeys.tick";
/** Runs advanced per transaction. */
const RUN_BATCH = 1000;
/** How long one advance job works before it yields its slot. */
const SLICE_MS = 5000;
/** Timers due within this are waited for in the job rather than left to the tick. */
const HORIZON_MS = 1000;

export interface JourneyRuntimeOptions {
  pool: pg.Pool;
  jobs: JobLayer;
  sends: SendJobs;
  segments: SegmentEngine;
  /** The runtime's clock (ms since epoch); tests move it. */
  clock: () => number;
  /** Observes how late each timer fired (s). */
  lateness?: (seconds: number) => void;
  /** The outbox's consumers: the runtime is one (event entries). */
  outbox: OutboxConsumers;
  log?: (msg: string) => void;
}

interface JourneyRow {
  id: string;
  created_at: Date;
  version: number;
  can_run_multiple: boolean;
  exit_segment_id: string | null;
  definition: JourneyDefinition;
  failing: boolean;
}

const toLive = (r: JourneyRow): LiveJourney => ({
  id: r.id,
  createdAt: r.created_at,
  version: r.version,
  canRunMultiple: r.can_run_multiple,
  exitSegmentId: r.exit_segment_id,
  definition: r.definition,
  failing: r.failing,
});

export class JourneyRuntime {
  /** Definitions by journey and version: a version never changes once written. */
  private versions = new Map<string, JourneyDefinition>();
  private deps: AdvanceDeps;

  constructor(private o: JourneyRuntimeOptions) {
    this.deps = {
      sends: o.sends,
      lateness: o.lateness ?? (() => {}),
      holdsMessages: async (db, workspaceId) => holdsMessages(await policiesFor(db, workspaceId)),
      definition: (db, workspaceId, journey, version) => this.definition(db, workspaceId, journey, version),
    };
  }

  register() {
    const { jobs, segments } = this.o;
    jobs.register(ADVANCE, async (p: { workspaceId: string }, job) => {
      if (await this.advance(p.workspaceId, job.stopping)) await this.wake(p.workspaceId);
    });
    jobs.register(ENTER, async (p: { workspaceId: string; journeyId: string }) => {
      // While no evaluation of the workspace is under way: one that began before the journey
      // started recorded no signal for it, so its members must be committed before they are read;
      // every later one sees the running journey and records its enters as signals.
      await segments.exclusive(p.workspaceId, async (db) => {
        const j = (await this.running(p.workspaceId, db)).find((r) => r.id === p.journeyId);
        if (j)
          await enterMembers(
            db,
            this.deps,
            p.workspaceId,
            j,
            () => this.now(),
            () => this.wake(p.workspaceId),
          );
      });
    });
    jobs.register(TICK, async () => {
      for (const workspaceId of await this.workspacesWithWork()) await this.wake(workspaceId);
    });
    jobs.recurring(TICK, 1);
    // The runtime's inputs, recorded in the commits that cause them: segment enters (in the
    // evaluation's statement) and track events of entry events (in the drain's transaction).
    const wakeOn = (workspaceId: string) => {
      void this.wake(workspaceId).catch((err) => this.o.log?.(`journeys: could not enqueue an advance: ${errorText(err)}`));
    };
    segments.recordEntersWith(journeySignalsOnEnter, wakeOn);
    this.o.outbox.add((db, workspaceId, rows) => recordEventEntries(db, workspaceId, rows, this.now()));
  }

  /** Enqueues the workspace's advance job. */
  wake(workspaceId: string) {
    return this.o.jobs.add(ADVANCE, { workspaceId }, { key: `journeys:${workspaceId}` });
  }

  /** For the transaction that starts a journey: its current segment members enter once it commits. */
  static startQueries(workspaceId: string, journeyId: string): Sql[] {
    return [addJobQuery(ENTER, { workspaceId, journeyId })];
  }

  /** For a transaction that makes runs due (resume): the workspace is advanced once it commits. */
  static wakeQueries(workspaceId: string): Sql[] {
    return [addJobQuery(ADVANCE, { workspaceId }, { key: `journeys:${workspaceId}` })];
  }

  /**
   * Applies everything due at the runtime's clock now, in this process (tests, after moving the
   * clock): signals, then every running journey's due runs, until none is left.
   */
  async settle(workspaceId: string) {
    for (;;) {
      while (await this.advance(workspaceId, undefined, true)) {}
      // Runs another worker holds (SKIP LOCKED passed them by) are waited for.
      const next = await this.nextDue(this.o.pool, workspaceId);
      const { rows } = await this.o.pool.query(sql`SELECT 1 FROM journey_signals WHERE workspace_id = ${workspaceId} LIMIT 1`);
      if (rows.length === 0 && (next === null || next > this.o.clock())) return;
      await sleep(20);
    }
  }

  /**
   * One slice: signals, then due runs, batch by batch. Returns whether work is left (the caller
   * wakes the workspace again).
   */
  private async advance(workspaceId: string, stopping?: AbortSignal, once = false): Promise<boolean> {
    const deadline = Date.now() + SLICE_MS;
    const client = await this.o.pool.connect();
    let broken: Error | undefined;
    try {
      for (;;) {
        let full = false;
        while ((await takeSignals(client, this.deps, workspaceId, (db) => this.running(workspaceId, db), this.now())) > 0) {
          if (Date.now() > deadline) return true;
        }
        const journeys = await this.running(workspaceId, client, true);
        let advanced = 0;
        for (const j of journeys) {
          try {
            for (;;) {
              const n = await advanceBatch(client, this.deps, workspaceId, j, this.now(), RUN_BATCH);
              advanced += n;
              if (n < RUN_BATCH) break;
              if (Date.now() > deadline || stopping?.aborted) {
                full = true;
                break;
              }
            }
            if (j.failing)
              await this.o.pool.query(sql`UPDATE journeys SET ${raw(CLEAR_FAILURE)} WHERE workspace_id = ${workspaceId} AND id = ${j.id}`);
          } catch (err) {
            // A journey whose runs cannot be advanced as defined is set aside; the others go on.
            if (!isDefinitionFault(err)) throw err;
            await markFailing(this.o.pool, "journeys", { workspaceId, id: j.id }, errorText(err), this.now(), {
              column: "version",
              value: j.version,
            });
          }
        }
        if (full) return true;
        if (once) return false;
        // Timers about to fall due are waited for here, on time, while the slice lasts.
        const next = await this.nextDue(client, workspaceId);
        if (next === null) return false;
        const wait = next - this.o.clock();
        // Due runs this pass could not take are another job's, under way (or a dead one's, which
        // the tick finds once its transaction is gone): that job goes on with them.
        if (wait <= 0 && advanced === 0) return false;
        if (wait > HORIZON_MS) return false;
        if (Date.now() + wait > deadline || stopping?.aborted) return true;
        if (wait > 0) await sleep(wait, stopping);
      }
    } catch (err) {
      broken = err as Error;
      throw err;
    } finally {
      client.release(broken);
    }
  }

  /**
   * The running journeys of a workspace with their current definition; `advancing`: only those
   * not failing, or whose retry is due (a failing journey's runs wait).
   */
  private async running(workspaceId: string, db: Pick<pg.Pool, "query"> = this.o.pool, advancing = false): Promise<LiveJourney[]> {
    const { rows } = await db.query<JourneyRow>(
      sql`SELECT id, created_at, version, can_run_multiple, exit_segment_id, definition, evaluation_error IS NOT NULL AS failing FROM journeys
       WHERE workspace_id = ${workspaceId} AND status = 'Running' AND definition IS NOT NULL AND version > 0
         AND (NOT ${advancing}::boolean OR evaluation_retry_at IS NULL OR evaluation_retry_at <= ${this.now()})`,
    );
    return rows.map(toLive);
  }

  /** A version's definition, parsed once (a stored one that is not valid is the journey's fault: DefinitionError). */
  private async definition(db: pg.PoolClient, workspaceId: string, journey: LiveJourney, version: number) {
    const key = `${workspaceId}:${journey.id}:${journey.createdAt.getTime()}:${version}`;
    const cached = this.versions.get(key);
    if (cached) return cached;
    const { rows } = await db.query<{ definition: unknown }>(
      sql`SELECT definition FROM journey_versions WHERE workspace_id = ${workspaceId} AND journey_id = ${journey.id} AND version = ${version}`,
    );
    if (rows.length === 0) return null;
    const parsed = JourneyDefinition.safeParse(rows[0]!.definition);
    if (!parsed.success) throw new DefinitionError(`version ${version} of the journey is not a valid definition: ${parsed.error.message}`);
    if (this.versions.size >= 10_000) this.versions.clear();
    this.versions.set(key, parsed.data);
    return parsed.data;
  }

  /** When the workspace's next run of a running journey falls due (ms), or null. */
  private async nextDue(db: Pick<pg.Pool, "query">, workspaceId: string): Promise<number | null> {
    const { rows } = await db.query<{ at: Date | null }>(nextDueQuery(workspaceId, this.now()));
    return rows[0]?.at ? rows[0].at.getTime() : null;
  }

  private async workspacesWithWork(): Promise<string[]> {
    const { rows } = await this.o.pool.query<{ workspace_id: string }>(dueWorkspacesQuery(new Date(this.o.clock() + HORIZON_MS)));
    return rows.map((r) => r.workspace_id);
  }

  private now() {
    return new Date(this.o.clock());
  }
}
