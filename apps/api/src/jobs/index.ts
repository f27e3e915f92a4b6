// Background jobs, kept in PostgreSQL (graphile-worker 0.17, schema `graphile_worker`).
//
// - `register(task, handler, {lane})` before `start()`. Jobs run only in TIDINGS_ROLE=all|worker processes;
//   any role enqueues. Workers share the jobs (SKIP LOCKED); a job is retried with exponential
//   back-off when its handler throws (25 attempts unless `maxAttempts`), so handlers are idempotent.
// - Lanes: the `send` lane (message senders, TIDINGS_SEND_CONCURRENCY slots) and the `default` lane
//   (everything else, TIDINGS_WORKER_CONCURRENCY), so neither can take the other's slots. A
//   handler still does a bounded slice of work and re-enqueues itself rather than looping.
// - Enqueue with `jobs.add(task, payload, opts)`, or in the caller's transaction with
//   `addJobQuery(...)`, a statement (db/sql.ts: pg `client.query(q)`, Prisma
//   `prismaExecute(tx, q)`): the job exists iff the transaction commits.
// - `queue`: a named queue runs its jobs one at a time across all workers. `key`: at most one
//   waiting job per key; adding it again updates the waiting job, but if the keyed job is running
//   a new job is created (and the running one is no longer retried), so no wake-up is lost — the
//   two may run at once unless they share a `queue`.
// - `recurring(task, seconds)`: one keyed job per task for the whole deployment, rescheduled at
//   the start of each run and at `start()` if none is waiting; runs never overlap (a session
//   advisory lock, freed by PostgreSQL if the process dies). Late by up to `pollIntervalMs`.
// - `listen(channel, handler)`: LISTEN in worker processes, for wake-ups that enqueue jobs.
// - `stop()`: takes no new job, waits for running ones up to `stopTimeoutMs`, then releases them.
// - Caveat (graphile-worker 0.17): a job whose process is SIGKILLed mid-run stays locked for 4 h
//   before another worker retries it, and a named queue it held is blocked as long. Recurring
//   tasks are not affected: their next run is scheduled before the handler starts.
export {
  createJobLayer,
  type JobInfo,
  type JobLayer,
  type JobLane,
  type JobLayerOptions,
  migrateJobs,
  type QueueStats,
  type TaskHandler,
} from "./layer.ts";
export { type JobLog, type JobLogLevel, levelLog } from "./log.ts";
export { addJobQuery, JOBS_SCHEMA, type JobOptions } from "./sql.ts";
export { registerJobGauges } from "./metrics.ts";
