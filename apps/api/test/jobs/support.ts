// Helpers of the job-layer tests: layers stopped after each file, polling, direct SQL.
import pg from "pg";
import { afterAll } from "vitest";
import { createJobLayer, type JobLayer, type JobLayerOptions } from "../../src/jobs/index.ts";

/** A short poll interval keeps the tests fast; the default is 500 ms. */
export const POLL_MS = 100;

export interface Jobs {
  layer(role: JobLayerOptions["role"], opts?: Partial<JobLayerOptions>): JobLayer;
  query<R extends pg.QueryResultRow = any>(text: string, values?: unknown[]): Promise<R[]>;
  pool: pg.Pool;
}

/** Layers on `databaseUrl`, stopped (and the pool ended) when the file is done. */
export function jobsOn(databaseUrl: string): Jobs {
  const layers: JobLayer[] = [];
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 });
  pool.on("error", () => {});
  afterAll(async () => {
    await Promise.all(layers.map((l) => l.stop()));
    await pool.end();
  });
  return {
    layer(role, opts = {}) {
      const layer = createJobLayer({ connectionString: databaseUrl, role, concurrency: 2, pollIntervalMs: POLL_MS, ...opts });
      layers.push(layer);
      return layer;
    },
    query: async (text, values) => (await pool.query(text, values)).rows,
    pool,
  };
}

/** Polls `check` until it returns something truthy; fails with `what` after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => T | Promise<T>, timeoutMs = 10_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(25);
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A promise with its resolve function, to hold a job until the test lets it finish. */
export function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/** The rows of graphile-worker's job table for one task. */
export function jobRows(jobs: Jobs, task: string) {
  return jobs.query<{
    id: string;
    key: string | null;
    locked: boolean;
    attempts: number;
    max_attempts: number;
    payload: any;
    run_at: Date;
  }>(
    `SELECT j.id, j.key, j.locked_at IS NOT NULL AS locked, j.attempts, j.max_attempts, j.payload, j.run_at
       FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks t ON t.id = j.task_id
      WHERE t.identifier = $1 ORDER BY j.id`,
    [task],
  );
}
