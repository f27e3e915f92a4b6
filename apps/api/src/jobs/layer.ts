// The job layer on graphile-worker: tasks registered by the capabilities, run by worker-role
// processes, enqueued by any process; recurring tasks and LISTEN wake-ups. See index.ts.
import { EventEmitter } from "node:events";
import { type Runner, run, runMigrations, type Task, type TaskList, type WorkerEvents, type WorkerPool } from "graphile-worker";
import pg from "pg";
import { type ChannelHandlers, Listener, type NotificationHandler } from "./listen.ts";
import { graphileLogger, type JobLog } from "./log.ts";
import {
  addJobQuery,
  ensureRecurring,
  JOBS_SCHEMA,
  type JobOptions,
  QUEUE_STATS,
  RECURRING_LOCK_SPACE,
  scheduleNextRun,
  scheduleRetry,
} from "./sql.ts";
import { raw, sql } from "../db/sql.ts";
import { errorText } from "../lib/errors.ts";
import { backoffMs, sleep } from "../lib/time.ts";

export interface JobInfo {
  id: string;
  /** 1 on the first run. */
  attempts: number;
  /** Aborted when a shutdown has waited half of `stopTimeoutMs` for this job: stop soon, and throw to be retried. */
  signal: AbortSignal;
  /** Aborted as soon as a shutdown begins: a handler working in slices ends after the current one. */
  stopping: AbortSignal;
}

/** Validate the payload (it is JSON from the database). Throwing fails the attempt; it is retried with back-off. */
// biome-ignore lint/suspicious/noExplicitAny: payloads are parsed by each handler
export type TaskHandler = (payload: any, job: JobInfo) => Promise<void>;

export interface QueueStats {
  /** Jobs due to run and not taken by a worker. */
  depth: number;
  /** Seconds since the oldest of them was due (0 when there is none). */
  oldestAgeSeconds: number;
}

export interface JobLayer {
  /** Enqueues on the layer's own connection (use `addJobQuery` to enqueue inside a transaction). */
  add(task: string, payload: unknown, opts?: JobOptions): Promise<void>;
  /**
   * Runs `task` (registered with `register`) every `seconds` on exactly one worker of the whole
   * deployment, never overlapping itself: a self-rescheduling keyed job, not an in-process timer.
   */
  recurring(task: string, seconds: number): void;
  /**
   * LISTEN on a PostgreSQL channel in worker processes; the handler should only enqueue jobs.
   * `resumed` runs after the LISTEN connection came back from a loss, during which notifications
   * were lost: it should look for the work they would have announced.
   */
  listen(channel: string, handler: NotificationHandler, opts?: { resumed?: () => void | Promise<void> }): void;
  /**
   * `lane: "send"` runs the task on the sending lane, which has its own share of the worker's
   * slots (`sendConcurrency`): message sending, however slow its providers, never takes the slots
   * of the segment engine, ticks and timers (the `default` lane), nor they its own.
   */
  register(task: string, handler: TaskHandler, opts?: { lane?: JobLane }): void;
  /** Migrates graphile-worker's schema (every role); runs jobs and listens only in `all` / `worker`. */
  start(): Promise<void>;
  /** Stops taking jobs and waits for running ones, at most `stopTimeoutMs`, then releases them to be retried. */
  stop(): Promise<void>;
  queueStats(): Promise<QueueStats>;
  /** The slots of `lane` in this process when both lanes have tasks (0 in an `api` process). */
  slots(lane: JobLane): number;
}

/** A share of a worker's job slots: a task runs on one lane. */
export type JobLane = "default" | "send";

export interface JobLayerOptions {
  connectionString: string;
  role: "all" | "api" | "worker";
  /**
   * Jobs run at once by this process. With `sendConcurrency`, the `default` lane's slots
   * (TIDINGS_WORKER_CONCURRENCY); without it, split between the lanes that have tasks: half (at
   * least 1) send messages, the rest run everything else (at least 1). Default 8.
   */
  concurrency?: number;
  /** The `send` lane's slots (TIDINGS_SEND_CONCURRENCY), when they are set apart from `concurrency`. */
  sendConcurrency?: number;
  /**
   * How often each idle worker slot looks for jobs that became due (default 500 ms). Jobs due at
   * once are announced by NOTIFY and start within milliseconds; this bounds the lateness of
   * scheduled ones (`runAt`, recurring, retries). Cost: concurrency × 1000/pollIntervalMs indexed
   * queries per second per idle process.
   */
  pollIntervalMs?: number;
  /** How long `stop()` waits for running jobs (default 10 000 ms). */
  stopTimeoutMs?: number;
  log?: JobLog;
}

const recurringKey = (task: string) => `recurring:${task}`;
/** Frees a recurring task's overlap guard. */
const unlock = (task: string) => sql`SELECT pg_advisory_unlock(${RECURRING_LOCK_SPACE}, hashtext(${task}))`;

/** Creates or upgrades graphile-worker's schema (`start()` does it too; for `tidings-api migrate`). */
export async function migrateJobs(connectionString: string, log: JobLog = () => {}): Promise<void> {
  await runMigrations({ connectionString, logger: graphileLogger(log) });
}

export function createJobLayer(opts: JobLayerOptions): JobLayer {
  const given = Math.max(1, opts.concurrency ?? 8);
  const sendSlots = opts.sendConcurrency === undefined ? null : Math.max(1, opts.sendConcurrency);
  /**
   * A lane's slots: set apart (`sendConcurrency`), or the whole concurrency when it is the only lane
   * with tasks, else its half (at least 1).
   */
  const laneConcurrency = (lane: JobLane, lanes: number) => {
    if (sendSlots !== null) return lane === "send" ? sendSlots : given;
    if (lanes === 1) return given;
    const send = Math.max(1, Math.floor(given / 2));
    return lane === "send" ? send : Math.max(1, given - send);
  };
  const concurrency = given + (sendSlots ?? 0);
  const pollInterval = opts.pollIntervalMs ?? 500;
  const stopTimeoutMs = opts.stopTimeoutMs ?? 10_000;
  const log = opts.log ?? (() => {});
  const runsJobs = opts.role !== "api";
  // Worker slots borrow a connection only to take and finish a job; add each lane's LISTEN
  // connection, recurring tasks' guards and one for add()/queueStats().
  const pool = new pg.Pool({
    connectionString: opts.connectionString,
    max: runsJobs ? concurrency + 4 : 2,
    idleTimeoutMillis: 30_000,
    application_name: "tidings-jobs",
  });
  pool.on("error", (err) => log("warn", `idle database connection failed: ${err.message}`));
  // A checked-out connection's error also surfaces as the failure of its next query.
  pool.on("connect", (client) => client.on("error", () => {}));

  const handlers = new Map<string, { handler: TaskHandler; lane: JobLane }>();
  const recurringTasks = new Map<string, number>();
  const channels = new Map<string, ChannelHandlers>();
  let phase: "new" | "started" | "stopped" = "new";
  let starting: Promise<void> | null = null;
  let stopping: Promise<void> | null = null;
  const runners: Runner[] = [];
  const workerPools: WorkerPool[] = [];
  let listener: Listener | null = null;

  const beforeStart = (what: string) => {
    if (phase !== "new" || starting) throw new Error(`jobs: ${what} must be called before start()`);
  };

  const shutdown = new AbortController();
  const plainTask =
    (handler: TaskHandler): Task =>
    (payload, helpers) =>
      handler(payload, { id: helpers.job.id, attempts: helpers.job.attempts, signal: helpers.abortSignal, stopping: shutdown.signal });

  /**
   * A recurring run: take the task's guard (a session advisory lock, released by PostgreSQL if
   * this process dies), schedule the next run, then run the handler. Rescheduling takes the key
   * off this job and sets it as out of attempts, so nothing may throw after it: errors are
   * logged, and the next run is the retry. When the previous run still holds the guard, the run
   * is postponed by a second (or the interval, if shorter) so that no wake-up is lost.
   */
  const recurringTask =
    (task: string, seconds: number, handler: TaskHandler): Task =>
    async (payload, helpers) => {
      const key = recurringKey(task);
      const client = await pool.connect();
      let locked = false;
      try {
        locked = (await client.query<{ ok: boolean }>(sql`SELECT pg_try_advisory_lock(${RECURRING_LOCK_SPACE}, hashtext(${task})) AS ok`))
          .rows[0]!.ok;
        if (!locked) {
          await client.query(scheduleRetry(task, key, Math.min(seconds, 1)));
          return;
        }
        await client.query(scheduleNextRun(task, key, helpers.job.run_at, seconds));
      } catch (err) {
        if (locked) await client.query(unlock(task)).catch(() => {});
        client.release(true);
        throw err; // nothing rescheduled: this job keeps its key and is retried
      }
      if (!locked) {
        client.release();
        return;
      }
      try {
        await plainTask(handler)(payload, helpers);
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

  async function doStart() {
    const logger = graphileLogger(log);
    for (const task of recurringTasks.keys()) {
      if (!handlers.has(task)) throw new Error(`jobs: recurring task ${task} has no handler; register() it`);
    }
    // One graphile-worker runner per lane, each taking only its lane's tasks with its own slots.
    const lanes = new Map<JobLane, TaskList>();
    if (runsJobs) {
      for (const [task, { handler, lane }] of handlers) {
        const seconds = recurringTasks.get(task);
        const list = lanes.get(lane) ?? {};
        list[task] = seconds === undefined ? plainTask(handler) : recurringTask(task, seconds, handler);
        lanes.set(lane, list);
      }
    }
    if (lanes.size === 0) {
      // Nothing to run here (the api role, or no task yet): graphile-worker would poll for nothing.
      await runMigrations({ pgPool: pool, logger });
    } else {
      for (const [lane, taskList] of lanes) await startRunner(lane, taskList, lanes.size, logger);
      for (const task of recurringTasks.keys()) await pool.query(ensureRecurring(task, recurringKey(task)));
    }
    if (runsJobs && channels.size > 0) {
      listener = new Listener(opts.connectionString, channels, log);
      await listener.start();
    }
    phase = "started";
  }

  async function startRunner(lane: JobLane, taskList: TaskList, laneCount: number, logger: ReturnType<typeof graphileLogger>) {
    const events: WorkerEvents = new EventEmitter();
    const poolIds: string[] = [];
    events.on("pool:create", ({ workerPool: created }) => {
      workerPools.push(created);
      poolIds.push(created.id);
    });
    const runner = await run({
      pgPool: pool,
      logger,
      events,
      taskList,
      parsedCronItems: [],
      concurrency: laneConcurrency(lane, laneCount),
      pollInterval,
      noHandleSignals: true, // shutdown is ours (main.ts)
      gracefulShutdownAbortTimeout: Math.floor(stopTimeoutMs / 2),
      // Unbatched (-1), a finished job's completion is not awaited by the shutdown, which can
      // then end before the job is marked done (seen in the shutdown test); batched, it is.
      preset: { worker: { completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
    });
    runners.push(runner);
    const ended = (reason: string) => {
      runners.splice(runners.indexOf(runner), 1);
      if (phase === "stopped") return;
      log("warn", `job runner (${lane}) stopped (${reason}); starting another`);
      void restartRunner(lane, taskList, laneCount, logger, poolIds);
    };
    runner.promise.then(
      () => ended("its worker pool shut down"),
      (err) => ended(errorText(err)),
    );
    if (phase === "stopped") await stopRunner(runner);
  }

  /**
   * A runner stops by itself when its worker pool gives up: graphile-worker shuts the pool down
   * once marking a job done or failed has failed 20 times (a few minutes without the database;
   * see patches/graphile-worker@0.17.3.patch). The process would stay up and run no job again:
   * another runner takes over once the database answers. The jobs the dead pool held are unlocked
   * (they would wait 4 h) and each recurring task of the lane gets a run (one whose rescheduling
   * failed kept the key on its locked job).
   */
  async function restartRunner(
    lane: JobLane,
    taskList: TaskList,
    laneCount: number,
    logger: ReturnType<typeof graphileLogger>,
    deadPools: string[],
  ) {
    const stopped = () => phase === "stopped";
    for (let attempt = 0; !stopped(); attempt++) {
      await sleep(backoffMs(attempt));
      if (stopped()) return;
      try {
        if (deadPools.length > 0) await pool.query(sql`SELECT ${raw(JOBS_SCHEMA)}.force_unlock_workers(${deadPools}::text[])`);
        for (const task of recurringTasks.keys()) {
          if (task in taskList) await pool.query(ensureRecurring(task, recurringKey(task)));
        }
        await startRunner(lane, taskList, laneCount, logger);
        return;
      } catch (err) {
        if (attempt % 10 === 0) log("warn", `job runner (${lane}) not started yet: ${errorText(err)}`);
      }
    }
  }

  async function doStop() {
    phase = "stopped";
    shutdown.abort();
    const runnersStopped = Promise.all(runners.map(stopRunner)); // at once: no new job from here on
    await listener?.close();
    await runnersStopped;
    // A job abandoned by a forceful shutdown may still hold a connection: do not wait for it.
    await Promise.race([pool.end(), new Promise((resolve) => setTimeout(resolve, 1000).unref())]);
  }

  async function stopRunner(r: Runner) {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), stopTimeoutMs);
    });
    const stopped = r.stop().then(
      () => false,
      (err) => {
        log("warn", `job runner did not stop cleanly: ${errorText(err)}`);
        return false;
      },
    );
    if (await Promise.race([stopped, timedOut])) {
      log("warn", `jobs still running after ${stopTimeoutMs} ms: releasing them to be retried`);
      // The runner's own kill() does nothing once a graceful shutdown has begun.
      for (const wp of workerPools) await Promise.resolve(wp.forcefulShutdown("Tidings is stopping")).catch(() => {});
      await stopped;
    }
    clearTimeout(timer);
  }

  return {
    async add(task, payload, jobOpts) {
      await pool.query(addJobQuery(task, payload, jobOpts));
    },
    recurring(task, seconds) {
      beforeStart("recurring()");
      if (!(seconds > 0 && Number.isFinite(seconds)))
        throw new Error(`jobs: recurring ${task}: interval must be a positive number of seconds`);
      recurringTasks.set(task, seconds);
    },
    listen(channel, handler, listenOpts) {
      beforeStart("listen()");
      const entry = channels.get(channel) ?? { notified: [], resumed: [] };
      entry.notified.push(handler);
      if (listenOpts?.resumed) entry.resumed.push(listenOpts.resumed);
      channels.set(channel, entry);
    },
    register(task, handler, taskOpts) {
      beforeStart("register()");
      if (handlers.has(task)) throw new Error(`jobs: task ${task} is registered twice`);
      handlers.set(task, { handler, lane: taskOpts?.lane ?? "default" });
    },
    start() {
      if (phase !== "new" || starting) return Promise.reject(new Error("jobs: start() may be called once, and not after stop()"));
      starting = doStart();
      return starting;
    },
    stop() {
      // While start() runs, stop once it is done; otherwise without yielding first.
      stopping ??= phase === "new" && starting ? starting.catch(() => {}).then(doStop) : doStop();
      return stopping;
    },
    slots(lane) {
      return runsJobs ? laneConcurrency(lane, 2) : 0;
    },
    async queueStats() {
      const { rows } = await pool.query<{ depth: number; oldest_age_seconds: number }>(QUEUE_STATS);
      return { depth: rows[0]!.depth, oldestAgeSeconds: rows[0]!.oldest_age_seconds };
    },
  };
}
