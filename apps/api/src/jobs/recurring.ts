// A recurring task's runs: one keyed job per task for the whole deployment, rescheduled at the
// start of each run, never overlapping itself (a session advisory lock per task).
import type pg from "pg";
import type { JobHelpers, Task } from "graphile-worker";
import { sql } from "../db/sql.ts";
import { errorText } from "../lib/errors.ts";
import type { JobLog } from "./log.ts";
import { ensureRecurring, RECURRING_LOCK_SPACE, scheduleNextRun, scheduleRetry } from "./sql.ts";

const recurringKey = (task: string) => `recurring:${task}`;
const tryLock = (task: string) => sql`SELECT pg_try_advisory_lock(${RECURRING_LOCK_SPACE}, hashtext(${task})) AS ok`;
/** Frees a recurring task's overlap guard. */
const unlock = (task: string) => sql`SELECT pg_advisory_unlock(${RECURRING_LOCK_SPACE}, hashtext(${task}))`;

/** Enqueues the task's keyed job unless one is waiting (at start, and after a runner came back). */
export const ensureRecurringJob = (pool: pg.Pool, task: string) => pool.query(ensureRecurring(task, recurringKey(task)));

/**
 * A recurring run: take the task's guard (released by PostgreSQL if this process dies), schedule
 * the next run, then run `run`. Rescheduling takes the key off this job and sets it as out of
 * attempts, so nothing may throw after it: errors are logged, and the next run is the retry. When
 * the previous run still holds the guard, the run is postponed by a second (or the interval, if
 * shorter) so that no wake-up is lost.
 */
export function recurringTask(pool: pg.Pool, task: string, seconds: number, run: Task, log: JobLog): Task {
  return async (payload, helpers) => {
    const client = await takeTurn(pool, task, seconds, helpers);
    if (!client) return;
    try {
      await run(payload, helpers);
    } catch (err) {
      log("error", `recurring task ${task} failed: ${errorText(err)}`);
    } finally {
      // Dropping the connection (release(true)) would free the lock too, should unlocking fail.
      const unlocked = await client.query(unlock(task)).then(
        () => true,
        () => false,
      );
      client.release(!unlocked);
    }
  };
}

/** The connection holding the task's guard with the next run scheduled, or null when another run holds it. */
async function takeTurn(pool: pg.Pool, task: string, seconds: number, helpers: JobHelpers): Promise<pg.PoolClient | null> {
  const key = recurringKey(task);
  const client = await pool.connect();
  let locked = false;
  try {
    locked = (await client.query<{ ok: boolean }>(tryLock(task))).rows[0]!.ok;
    if (!locked) {
      await client.query(scheduleRetry(task, key, Math.min(seconds, 1)));
      client.release();
      return null;
    }
    await client.query(scheduleNextRun(task, key, helpers.job.run_at, seconds));
    return client;
  } catch (err) {
    if (locked) await client.query(unlock(task)).catch(() => {});
    client.release(true);
    throw err; // nothing rescheduled: this job keeps its key and is retried
  }
}
