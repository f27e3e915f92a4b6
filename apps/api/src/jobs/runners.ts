// graphile-worker runners, one per lane, each taking only its lane's tasks with its own slots;
// a runner whose worker pool gave up is replaced; stopping waits for running jobs, then releases them.
import { EventEmitter } from "node:events";
import { type Runner, run, type TaskList, type WorkerEvents, type WorkerPool } from "graphile-worker";
import type pg from "pg";
import { raw, sql } from "../db/sql.ts";
import { errorText } from "../lib/errors.ts";
import { backoffMs, sleep } from "../lib/time.ts";
import { graphileLogger, type JobLog } from "./log.ts";
import { JOBS_SCHEMA } from "./sql.ts";

export interface RunnerOptions {
  pollInterval: number;
  stopTimeoutMs: number;
  log: JobLog;
  /** Run before a replacement runner starts (the lane's recurring tasks get a run). */
  beforeRestart: (taskList: TaskList) => Promise<void>;
}

export interface Lane {
  name: string;
  taskList: TaskList;
  concurrency: number;
}

export class Runners {
  private readonly running: Runner[] = [];
  private readonly workerPools: WorkerPool[] = [];
  private readonly logger: ReturnType<typeof graphileLogger>;
  private stopped = false;

  constructor(
    private readonly pool: pg.Pool,
    private readonly opts: RunnerOptions,
  ) {
    this.logger = graphileLogger(opts.log);
  }

  async start(lane: Lane): Promise<void> {
    const events: WorkerEvents = new EventEmitter();
    const poolIds: string[] = [];
    events.on("pool:create", ({ workerPool }) => {
      this.workerPools.push(workerPool);
      poolIds.push(workerPool.id);
    });
    const runner = await run({
      pgPool: this.pool,
      logger: this.logger,
      events,
      taskList: lane.taskList,
      parsedCronItems: [],
      concurrency: lane.concurrency,
      pollInterval: this.opts.pollInterval,
      noHandleSignals: true, // shutdown is ours (main.ts)
      gracefulShutdownAbortTimeout: Math.floor(this.opts.stopTimeoutMs / 2),
      // Unbatched (-1), a finished job's completion is not awaited by the shutdown, which can
      // then end before the job is marked done (seen in the shutdown test); batched, it is.
      preset: { worker: { completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
    });
    this.running.push(runner);
    const ended = (reason: string) => {
      this.running.splice(this.running.indexOf(runner), 1);
      if (this.stopped) return;
      this.opts.log("warn", `job runner (${lane.name}) stopped (${reason}); starting another`);
      void this.restart(lane, poolIds);
    };
    runner.promise.then(
      () => ended("its worker pool shut down"),
      (err) => ended(errorText(err)),
    );
    if (this.stopped) await this.stopOne(runner);
  }

  /** Stops every runner at once (no new job from here on), each waiting at most `stopTimeoutMs`. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.running.map((r) => this.stopOne(r)));
  }

  /**
   * A runner stops by itself when its worker pool gives up: graphile-worker shuts the pool down
   * once marking a job done or failed has failed 20 times (a few minutes without the database;
   * see patches/graphile-worker@0.17.3.patch). The process would stay up and run no job again:
   * another runner takes over once the database answers. The jobs the dead pool held are unlocked
   * (they would wait 4 h) and each recurring task of the lane gets a run (one whose rescheduling
   * failed kept the key on its locked job).
   */
  private async restart(lane: Lane, deadPools: string[]): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt++) {
      await sleep(backoffMs(attempt));
      if (this.stopped) return;
      try {
        if (deadPools.length > 0) await this.pool.query(sql`SELECT ${raw(JOBS_SCHEMA)}.force_unlock_workers(${deadPools}::text[])`);
        await this.opts.beforeRestart(lane.taskList);
        await this.start(lane);
        return;
      } catch (err) {
        if (attempt % 10 === 0) this.opts.log("warn", `job runner (${lane.name}) not started yet: ${errorText(err)}`);
      }
    }
  }

  private async stopOne(r: Runner): Promise<void> {
    const { stopTimeoutMs, log } = this.opts;
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
      for (const wp of this.workerPools) await Promise.resolve(wp.forcefulShutdown("Tidings is stopping")).catch(() => {});
      await stopped;
    }
    clearTimeout(timer);
  }
}
