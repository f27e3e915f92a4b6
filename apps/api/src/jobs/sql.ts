// The SQL of the job layer: graphile-worker's `add_job` function, called with parameters so it
// can run on any connection (a pg client or Prisma, inside the caller's transaction).
import { param, raw, type Sql, sql } from "../db/sql.ts";

/** graphile-worker's schema (its default), created and migrated by `JobLayer.start()`. */
export const JOBS_SCHEMA = "graphile_worker";
/** The schema in statements. */
const schema = raw(JOBS_SCHEMA);

export interface JobOptions {
  /** A named queue runs its jobs one at a time across every worker. Keep the number of names small. */
  queue?: string;
  /**
   * De-duplicates: at most one job with this key waits to run. Adding it again replaces the waiting
   * job (payload, run time…). If the job with the key is running, a new job is created (the running
   * one is not retried if it fails): a wake-up is never lost.
   */
  key?: string;
  /** Not before this time (default: now). */
  runAt?: Date;
  /** Attempts before a failing job is kept as permanently failed (default 25, exponential back-off). */
  maxAttempts?: number;
  /** With `key`: `preserve_run_at` keeps the waiting job's run time instead of replacing it. */
  keyMode?: "replace" | "preserve_run_at";
}

/**
 * The statement that enqueues a job. Run it in the caller's transaction — `client.query(q)` or
 * `prismaExecute(tx, q)` — and the job exists iff that transaction commits (workers are woken by a
 * NOTIFY, which PostgreSQL delivers on commit).
 */
export function addJobQuery(task: string, payload: unknown, opts: JobOptions = {}): Sql {
  return sql`SELECT id FROM ${schema}.add_job(${task}::text, ${JSON.stringify(payload ?? {})}::json, queue_name => ${opts.queue ?? null}::text,
      run_at => ${opts.runAt?.toISOString() ?? null}::timestamptz, max_attempts => ${opts.maxAttempts ?? null}::int,
      job_key => ${opts.key ?? null}::text, job_key_mode => ${opts.keyMode ?? "replace"}::text)`;
}

/**
 * Schedules the next run of a recurring task under its key: `due` is when the current run was due;
 * the next is the first multiple of the interval after it that is still ahead (no drift, and no
 * burst of catch-up runs after downtime). The running job loses the key (see `JobOptions.key`).
 */
export function scheduleNextRun(task: string, key: string, due: Date, seconds: number): Sql {
  const [at, every] = [param(due), param(seconds)];
  return sql`SELECT id FROM ${schema}.add_job(${task}::text, '{}'::json, job_key => ${key}::text,
  run_at => ${at}::timestamptz + make_interval(secs => ${every}::float8 * greatest(1, ceil(extract(epoch FROM now() - ${at}::timestamptz) / ${every}::float8))),
  job_key_mode => 'replace')`;
}

/** Schedules a recurring task's run in `seconds` (the previous run is still going). */
export const scheduleRetry = (task: string, key: string, seconds: number): Sql =>
  sql`SELECT id FROM ${schema}.add_job(${task}::text, '{}'::json, job_key => ${key}::text,
  run_at => now() + make_interval(secs => ${seconds}::float8), job_key_mode => 'replace')`;

/** At start: a recurring task gets a run now unless one is waiting (its time is kept). */
export const ensureRecurring = (task: string, key: string): Sql =>
  sql`SELECT id FROM ${schema}.add_job(${task}::text, '{}'::json, job_key => ${key}::text,
  run_at => now(), job_key_mode => 'preserve_run_at')`;

/** Two-key advisory lock space of the recurring tasks' overlap guard (the second key is hashtext(task)). */
export const RECURRING_LOCK_SPACE = 0x74646a62; // "tdjb"

/**
 * Jobs due and free to be taken — not locked by a worker, attempts left — and how long the oldest
 * has been due. Jobs waiting behind a busy named queue count: they are due.
 */
export const QUEUE_STATS = sql`SELECT count(*)::int AS depth,
  coalesce(extract(epoch FROM now() - min(run_at)), 0)::float8 AS oldest_age_seconds
  FROM ${schema}._private_jobs WHERE is_available AND run_at <= now()`;
