// Recurring tasks: one pending run for the whole deployment, never overlapping, rescheduled
// before each run so that a SIGKILLed worker does not stop the schedule.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JobLogLevel } from "../../src/jobs/index.ts";
import { createTestDatabase } from "../support/app.ts";
import { type Jobs, jobRows, jobsOn, sleep, waitFor } from "./support.ts";

const API_DIR = fileURLToPath(new URL("../..", import.meta.url));

let databaseUrl: string;
let jobs: Jobs;
beforeAll(async () => {
  databaseUrl = await createTestDatabase();
  jobs = jobsOn(databaseUrl);
});

interface Run {
  layer: string;
  start: number;
  end?: number;
}

/** Samples the task's job rows until stopped: the most that waited (unlocked) at once. */
function samplePending(task: string) {
  let most = 0;
  let stopped = false;
  const done = (async () => {
    while (!stopped) {
      const waiting = (await jobRows(jobs, task)).filter((r) => !r.locked && r.attempts < r.max_attempts);
      most = Math.max(most, waiting.length);
      await sleep(20);
    }
  })();
  return async () => {
    stopped = true;
    await done;
    return most;
  };
}

function expectNoOverlap(runs: Run[]) {
  const sorted = [...runs].sort((a, b) => a.start - b.start);
  for (let i = 1; i < sorted.length; i++)
    expect(sorted[i]!.start, `run ${i} started before run ${i - 1} ended`).toBeGreaterThanOrEqual(sorted[i - 1]!.end!);
}

describe("recurring", () => {
  it("runs every interval, one run at a time and one pending run across two workers", async () => {
    const runs: Run[] = [];
    for (const name of ["a", "b"]) {
      const layer = jobs.layer("worker");
      layer.register("tick", async () => {
        const run: Run = { layer: name, start: Date.now() };
        runs.push(run);
        await sleep(50);
        run.end = Date.now();
      });
      layer.recurring("tick", 1);
      await layer.start();
    }
    const stopSampling = samplePending("tick");
    await waitFor("five runs", () => runs.filter((r) => r.end).length >= 5, 15_000);
    expect(await stopSampling()).toBe(1);
    const finished = runs.filter((r) => r.end);
    expectNoOverlap(finished);
    // The first run comes at start; then one a second (late by about a poll interval at most).
    const starts = finished.map((r) => r.start).sort((a, b) => a - b);
    for (let i = 1; i < starts.length; i++) {
      expect(starts[i]! - starts[i - 1]!).toBeGreaterThan(700);
      expect(starts[i]! - starts[i - 1]!).toBeLessThan(1800);
    }
    const waiting = (await jobRows(jobs, "tick")).filter((r) => !r.locked);
    expect(waiting).toMatchObject([{ key: "recurring:tick", attempts: 0 }]);
  });

  it("does not overlap a run that outlasts the interval; the next follows it", async () => {
    const runs: Run[] = [];
    for (const name of ["a", "b"]) {
      const layer = jobs.layer("worker");
      layer.register("slow_tick", async () => {
        const run: Run = { layer: name, start: Date.now() };
        runs.push(run);
        await sleep(700);
        run.end = Date.now();
      });
      layer.recurring("slow_tick", 0.2);
      await layer.start();
    }
    const stopSampling = samplePending("slow_tick");
    await waitFor("three runs", () => runs.filter((r) => r.end).length >= 3, 15_000);
    expect(await stopSampling()).toBe(1);
    const finished = runs.filter((r) => r.end).sort((a, b) => a.start - b.start);
    expectNoOverlap(finished);
    for (let i = 1; i < finished.length; i++) expect(finished[i]!.start - finished[i - 1]!.end!).toBeLessThan(1000);
  });

  it("logs a failing run and keeps the schedule, leaving no failed job behind", async () => {
    const errors: string[] = [];
    let attempts = 0;
    const layer = jobs.layer("worker", {
      log: (level: JobLogLevel, message: string) => {
        if (level === "error") errors.push(message);
      },
    });
    layer.register("failing_tick", async () => {
      attempts++;
      throw new Error("no luck");
    });
    layer.recurring("failing_tick", 0.3);
    await layer.start();
    await waitFor("three runs", () => attempts >= 3);
    expect(errors.filter((m) => m.includes("recurring task failing_tick failed: no luck")).length).toBeGreaterThanOrEqual(2);
    const rows = await jobRows(jobs, "failing_tick");
    expect(rows.filter((r) => !r.locked && r.attempts >= r.max_attempts)).toEqual([]);
    expect(rows.filter((r) => !r.locked)).toMatchObject([{ key: "recurring:failing_tick" }]);
  });

  it("runs at once when the task is added as a job, then keeps its schedule", async () => {
    let runs = 0;
    const layer = jobs.layer("worker");
    layer.register("hourly", async () => {
      runs++;
    });
    layer.recurring("hourly", 3600);
    await layer.start();
    await waitFor("the run at start", () => runs === 1);
    await layer.add("hourly", {});
    await waitFor("the extra run", () => runs === 2);
    await waitFor("the extra run's job to be gone", async () => (await jobRows(jobs, "hourly")).length === 1);
    const [next] = await jobRows(jobs, "hourly");
    expect(next!.key).toBe("recurring:hourly");
    expect(next!.run_at.getTime() - Date.now()).toBeGreaterThan(3500_000);
  });

  describe("when the worker running it is killed", () => {
    const children: ReturnType<typeof spawn>[] = [];
    afterAll(() => {
      for (const child of children) child.kill("SIGKILL");
    });

    it("another worker carries on with the schedule", async () => {
      await jobs.query("CREATE TABLE job_test_ticks (pid int NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())");
      const ticksOf = async (pid: number) => (await jobs.query("SELECT 1 FROM job_test_ticks WHERE pid = $1", [pid])).length;
      // This process runs the task too, from before the other worker starts until after it dies:
      // nothing restarts here, so only the run scheduled ahead of the killed one can carry on.
      const layer = jobs.layer("worker");
      layer.register("kill_tick", async () => {
        await jobs.query("INSERT INTO job_test_ticks (pid) VALUES ($1)", [process.pid]);
      });
      layer.recurring("kill_tick", 1);
      await layer.start();
      await waitFor("a run in this process", async () => (await ticksOf(process.pid)) > 0);

      const child = spawn(process.execPath, ["--import", "tsx", "test/jobs/fixtures/recurring-child.ts"], {
        cwd: API_DIR,
        env: { ...process.env, DATABASE_URL: databaseUrl, TICK_SECONDS: "1" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      children.push(child);
      let output = "";
      child.stdout!.on("data", (d) => (output += d));
      child.stderr!.on("data", (d) => (output += d));
      // The child's run never ends: until it is killed, runs here find the task busy.
      await waitFor("a run in the other process", async () => (await ticksOf(child.pid!)) > 0 || child.exitCode !== null, 30_000);
      expect(child.exitCode, output).toBeNull();
      const before = await ticksOf(process.pid);
      child.kill("SIGKILL");
      await once(child, "exit");

      // Without the next run scheduled ahead, the killed run's job would stay locked for 4 hours.
      await waitFor("two more runs in this process", async () => (await ticksOf(process.pid)) >= before + 2, 10_000);
      expect(await ticksOf(child.pid!)).toBe(1);
    });
  });
});
