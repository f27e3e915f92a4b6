// The job layer on graphile-worker: tasks registered by the capabilities, run by worker-role
// processes, enqueued by any process; recurring tasks and LISTEN wake-ups. See index.ts.
import { runMigrations, type Task, type TaskList } from "graphile-worker";
import pg from "pg";
import { type ChannelHandlers, Listener, type NotificationHandler } from "./listen.ts";
import { graphileLogger, type JobLog } from "./log.ts";
import { ensureRecurringJob, recurringTask } from "./recurring.ts";
import { Runners } from "./runners.ts";
import { addJobQuery, type JobOptions, QUEUE_STATS } from "./sql.ts";

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

/** Creates or upgrades graphile-worker's schema (`start()` does it too; for `tidings-api migrate`). */
export async function migrateJobs(connectionString: string, log: JobLog = () => {}): Promise<void> {
  await runMigrations({ connectionString, logger: graphileLogger(log) });
}

export function createJobLayer(opts: JobLayerOptions): JobLayer {
  return new PgJobLayer(opts);
}

/**
 * A lane's slots: set apart (`sendConcurrency`), or the whole concurrency when it is the only lane
 * with tasks, else its half (at least 1).
 */
function laneSlots(opts: JobLayerOptions, lane: JobLane, lanes: number): number {
  const given = Math.max(1, opts.concurrency ?? 8);
  if (opts.sendConcurrency !== undefined) return lane === "send" ? Math.max(1, opts.sendConcurrency) : given;
  if (lanes === 1) return given;
  const send = Math.max(1, Math.floor(given / 2));
  return lane === "send" ? send : Math.max(1, given - send);
}

function jobPool(opts: JobLayerOptions, log: JobLog): pg.Pool {
  const runsJobs = opts.role !== "api";
  const concurrency = Math.max(1, opts.concurrency ?? 8) + (opts.sendConcurrency ?? 0);
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
  return pool;
}

class PgJobLayer implements JobLayer {
  private readonly log: JobLog;
  private readonly pool: pg.Pool;
  private readonly runsJobs: boolean;
  private readonly runners: Runners;
  private readonly handlers = new Map<string, { handler: TaskHandler; lane: JobLane }>();
  private readonly recurringTasks = new Map<string, number>();
  private readonly channels = new Map<string, ChannelHandlers>();
  private readonly shutdown = new AbortController();
  private phase: "new" | "started" | "stopped" = "new";
  private starting: Promise<void> | null = null;
  private stopping: Promise<void> | null = null;
  private listener: Listener | null = null;

  constructor(private readonly opts: JobLayerOptions) {
    this.log = opts.log ?? (() => {});
    this.runsJobs = opts.role !== "api";
    this.pool = jobPool(opts, this.log);
    this.runners = new Runners(this.pool, {
      pollInterval: opts.pollIntervalMs ?? 500,
      stopTimeoutMs: opts.stopTimeoutMs ?? 10_000,
      log: this.log,
      beforeRestart: (taskList) => this.ensureRecurring(Object.keys(taskList)),
    });
  }

  async add(task: string, payload: unknown, jobOpts?: JobOptions): Promise<void> {
    await this.pool.query(addJobQuery(task, payload, jobOpts));
  }

  recurring(task: string, seconds: number): void {
    this.beforeStart("recurring()");
    if (!(seconds > 0 && Number.isFinite(seconds)))
      throw new Error(`jobs: recurring ${task}: interval must be a positive number of seconds`);
    this.recurringTasks.set(task, seconds);
  }

  listen(channel: string, handler: NotificationHandler, listenOpts?: { resumed?: () => void | Promise<void> }): void {
    this.beforeStart("listen()");
    const entry = this.channels.get(channel) ?? { notified: [], resumed: [] };
    entry.notified.push(handler);
    if (listenOpts?.resumed) entry.resumed.push(listenOpts.resumed);
    this.channels.set(channel, entry);
  }

  register(task: string, handler: TaskHandler, taskOpts?: { lane?: JobLane }): void {
    this.beforeStart("register()");
    if (this.handlers.has(task)) throw new Error(`jobs: task ${task} is registered twice`);
    this.handlers.set(task, { handler, lane: taskOpts?.lane ?? "default" });
  }

  start(): Promise<void> {
    if (this.phase !== "new" || this.starting) return Promise.reject(new Error("jobs: start() may be called once, and not after stop()"));
    this.starting = this.doStart();
    return this.starting;
  }

  stop(): Promise<void> {
    // While start() runs, stop once it is done; otherwise without yielding first.
    const stop = () => this.doStop();
    this.stopping ??= this.phase === "new" && this.starting ? this.starting.catch(() => {}).then(stop) : stop();
    return this.stopping;
  }

  slots(lane: JobLane): number {
    return this.runsJobs ? laneSlots(this.opts, lane, 2) : 0;
  }

  async queueStats(): Promise<QueueStats> {
    const { rows } = await this.pool.query<{ depth: number; oldest_age_seconds: number }>(QUEUE_STATS);
    return { depth: rows[0]!.depth, oldestAgeSeconds: rows[0]!.oldest_age_seconds };
  }

  private beforeStart(what: string): void {
    if (this.phase !== "new" || this.starting) throw new Error(`jobs: ${what} must be called before start()`);
  }

  private async doStart(): Promise<void> {
    for (const task of this.recurringTasks.keys()) {
      if (!this.handlers.has(task)) throw new Error(`jobs: recurring task ${task} has no handler; register() it`);
    }
    const lanes = this.taskLists();
    if (lanes.size === 0) {
      // Nothing to run here (the api role, or no task yet): graphile-worker would poll for nothing.
      await runMigrations({ pgPool: this.pool, logger: graphileLogger(this.log) });
    } else {
      for (const [lane, taskList] of lanes) {
        await this.runners.start({ name: lane, taskList, concurrency: laneSlots(this.opts, lane, lanes.size) });
      }
      await this.ensureRecurring([...this.recurringTasks.keys()]);
    }
    if (this.runsJobs && this.channels.size > 0) {
      this.listener = new Listener(this.opts.connectionString, this.channels, this.log);
      await this.listener.start();
    }
    this.phase = "started";
  }

  /** Each lane's tasks (none in an `api` process). */
  private taskLists(): Map<JobLane, TaskList> {
    const lanes = new Map<JobLane, TaskList>();
    if (!this.runsJobs) return lanes;
    for (const [task, { handler, lane }] of this.handlers) {
      const seconds = this.recurringTasks.get(task);
      const list = lanes.get(lane) ?? {};
      list[task] =
        seconds === undefined ? this.plainTask(handler) : recurringTask(this.pool, task, seconds, this.plainTask(handler), this.log);
      lanes.set(lane, list);
    }
    return lanes;
  }

  private plainTask(handler: TaskHandler): Task {
    return (payload, helpers) =>
      handler(payload, { id: helpers.job.id, attempts: helpers.job.attempts, signal: helpers.abortSignal, stopping: this.shutdown.signal });
  }

  private async ensureRecurring(tasks: string[]): Promise<void> {
    for (const task of tasks) if (this.recurringTasks.has(task)) await ensureRecurringJob(this.pool, task);
  }

  private async doStop(): Promise<void> {
    this.phase = "stopped";
    this.shutdown.abort();
    const runnersStopped = this.runners.stop(); // at once: no new job from here on
    await this.listener?.close();
    await runnersStopped;
    // A job abandoned by a forceful shutdown may still hold a connection: do not wait for it.
    await Promise.race([this.pool.end(), new Promise((resolve) => setTimeout(resolve, 1000).unref())]);
  }
}
