// The SQL of the job layer: graphile-worker's `add_job` function, called with parameters so it
// can run on any connection (a pg client or Prisma, inside the caller's transaction).

/** graphile-worker's schema (its default), created and migrated by `JobLayer.start()`. */
export const JOBS_SCHEMA = "graphile_worker";

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

export interface SqlQuery {
  text: string;
  values: unknown[];
}

/**
 * The statement that enqueues a job. Run it in the caller's transaction — `client.query(q.text,
 * q.values)` or `tx.$executeRawUnsafe(q.text, ...q.values)` — and the job exists iff that
 * transaction commits (workers are woken by a NOTIFY, which PostgreSQL delivers on commit).
 */
export function addJobQuery(task: string, payload: unknown, opts: JobOptions = {}): SqlQuery {
  return {
    text: `SELECT id FROM ${JOBS_SCHEMA}.add_job($1::text, $2::json, queue_name => $3::text, run_at => $4::timestamptz,
      max_attempts => $5::int, job_key => $6::text, job_key_mode => $7::text)`,
    values: [
      task,
      JSON.stringify(payload ?? {}),
      opts.queue ?? null,
      opts.runAt?.toISOString() ?? null,
      opts.maxAttempts ?? null,
      opts.key ?? null,
      opts.keyMode ?? "replace",
    ],
  };
}

/**
 * Schedules the next run of a recurring task under its key: `$3` is when the current run was due;
 * the next is the first multiple of the interval after it that is still ahead (no drift, and no
 * burst of catch-up runs after downtime). The running job loses the key (see `JobOptions.key`).
 */
export const SCHEDULE_NEXT_RUN = `SELECT id FROM ${JOBS_SCHEMA}.add_job($1::text, '{}'::json, job_key => $2::text,
  run_at => $3::timestamptz + make_interval(secs => $4::float8 * greatest(1, ceil(extract(epoch FROM now() - $3::timestamptz) / $4::float8))),
  job_key_mode => 'replace')`;

/** Schedules a recurring task's run in `$3` seconds (the previous run is still going). */
export const SCHEDULE_RETRY = `SELECT id FROM ${JOBS_SCHEMA}.add_job($1::text, '{}'::json, job_key => $2::text,
  run_at => now() + make_interval(secs => $3::float8), job_key_mode => 'replace')`;

/** At start: a recurring task gets a run now unless one is waiting (its time is kept). */
export const ENSURE_RECURRING = `SELECT id FROM ${JOBS_SCHEMA}.add_job($1::text, '{}'::json, job_key => $2::text,
  run_at => now(), job_key_mode => 'preserve_run_at')`;

/** Two-key advisory lock space of the recurring tasks' overlap guard (the second key is hashtext(task)). */
export const RECURRING_LOCK_SPACE = 0x74646a62; // "tdjb"

/**
 * Jobs due and free to be taken — not locked by a worker, attempts left — and how long the oldest
 * has been due. Jobs waiting behind a busy named queue count: they are due.
 */
export const QUEUE_STATS = `SELECT count(*)::int AS depth,
  coalesce(extract(epoch FROM now() - min(run_at)), 0)::float8 AS oldest_age_seconds
  FROM ${JOBS_SCHEMA}._private_jobs WHERE is_available AND run_at <= now()`;
