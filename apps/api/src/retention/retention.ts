// Retention on the job layer (TIDINGS_EVENT_RETENTION_DAYS, TIDINGS_DELIVERY_RETENTION_DAYS; off
// by default). A recurring tick, once per deployment every hour, enqueues `retention.prune`; each
// prune job runs one bounded slice (prune.ts) and, while old rows remain, enqueues its successor
// with the cursor. The jobs share a named queue, so one runs at a time across every worker; were
// two to run at once, their batches skip each other's rows (SKIP LOCKED) and each row is counted
// by the one statement that removed it.
import type pg from "pg";
import type { JobLayer } from "../jobs/index.ts";
import { PRUNE_KINDS, type PruneCursor, type PruneKind, pruneSlice, type RetentionPolicy, retentionEnabled } from "./prune.ts";

const TICK_TASK = "retention.tick";
const PRUNE_TASK = "retention.prune";
/** One prune job waits at a time (a tick finding it waiting replaces it: harmless, it starts over). */
const PRUNE_KEY = "retention.prune";
const PRUNE_QUEUE = "retention";
const TICK_SECONDS = 3600;

export interface RetentionOptions {
  pool: pg.Pool;
  jobs: JobLayer;
  policy: RetentionPolicy;
  clock: () => number;
  /** Rows pruned, by kind (the metric). */
  onPruned: (kind: PruneKind, rows: number) => void;
  /** Rows per statement (default 5 000). */
  batchSize?: number;
  /** How long one job prunes before it yields to its successor (default 2 000 ms). */
  sliceMs?: number;
}

export class Retention {
  constructor(private o: RetentionOptions) {}

  get enabled(): boolean {
    return retentionEnabled(this.o.policy);
  }

  /** Registers the tasks (always, so a job left from a start with retention on finds its handler). */
  register() {
    const { jobs } = this.o;
    jobs.register(TICK_TASK, () => this.wake());
    jobs.register(PRUNE_TASK, (payload: { cursor?: PruneCursor }, job) => this.prune(payload.cursor ?? null, job.stopping));
    if (this.enabled) jobs.recurring(TICK_TASK, TICK_SECONDS);
  }

  /** Starts a pruning pass now (nothing when retention is off). */
  async wake() {
    if (this.enabled) await this.o.jobs.add(PRUNE_TASK, {}, { key: PRUNE_KEY, queue: PRUNE_QUEUE });
  }

  private async prune(cursor: PruneCursor | null, stopping: AbortSignal) {
    if (!this.enabled) return;
    if (cursor && !PRUNE_KINDS.includes(cursor.kind)) cursor = null;
    const next = await pruneSlice(
      this.o.pool,
      {
        policy: this.o.policy,
        batchSize: this.o.batchSize ?? 5000,
        sliceMs: this.o.sliceMs ?? 2000,
        now: this.o.clock(),
        onPruned: this.o.onPruned,
        stopping,
      },
      cursor,
    );
    if (next) await this.o.jobs.add(PRUNE_TASK, { cursor: next }, { key: PRUNE_KEY, queue: PRUNE_QUEUE });
  }
}
