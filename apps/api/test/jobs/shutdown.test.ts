// stop(): running jobs finish and are not run again; a job that will not finish is released
// (to be retried elsewhere) once stopTimeoutMs has passed.
import { beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../support/app.ts";
import { gate, type Jobs, jobRows, jobsOn, POLL_MS, sleep, waitFor } from "./support.ts";

let jobs: Jobs;
beforeAll(async () => {
  jobs = jobsOn(await createTestDatabase());
});

describe("stop()", () => {
  it("lets a running job finish, and the job is not run again", async () => {
    const events: string[] = [];
    const layer = jobs.layer("worker");
    layer.register("finish_me", async () => {
      events.push("job started");
      await sleep(300);
      events.push("job finished");
    });
    await layer.start();
    await layer.add("finish_me", {});
    await waitFor("the job to start", () => events.includes("job started"));
    await layer.stop();
    events.push("stopped");
    expect(events).toEqual(["job started", "job finished", "stopped"]);
    // Completed jobs are deleted: nothing is left to run again, here or elsewhere.
    expect(await jobRows(jobs, "finish_me")).toEqual([]);
    const again = jobs.layer("worker");
    again.register("finish_me", async () => {
      events.push("ran again");
    });
    await again.start();
    await sleep(POLL_MS * 5);
    expect(events).not.toContain("ran again");
  });

  it("tells running jobs at once that a shutdown began (`stopping`), long before `signal`", async () => {
    let stoppingAt = 0;
    let signalAt = 0;
    const layer = jobs.layer("worker", { stopTimeoutMs: 4000 });
    layer.register("sliced", async (_payload, job) => {
      // A handler working in slices: it ends after the slice under way once told.
      while (!job.stopping.aborted) await sleep(20);
      stoppingAt = Date.now();
      if (job.signal.aborted) signalAt = Date.now();
    });
    await layer.start();
    await layer.add("sliced", {});
    await waitFor("the job to start", async () => (await jobRows(jobs, "sliced"))[0]?.locked);
    const t0 = Date.now();
    await layer.stop();
    expect(stoppingAt - t0).toBeLessThan(1000);
    expect(signalAt, "the abort signal comes only after half of stopTimeoutMs").toBe(0);
    expect(await jobRows(jobs, "sliced")).toEqual([]);
  });

  it("takes no new job once stopping", async () => {
    const hold = gate();
    const started: number[] = [];
    const layer = jobs.layer("worker", { concurrency: 1 });
    layer.register("one_by_one", async (payload: { n: number }) => {
      started.push(payload.n);
      await hold.opened;
    });
    await layer.start();
    await layer.add("one_by_one", { n: 1 });
    await waitFor("the first job to start", () => started.length === 1);
    await layer.add("one_by_one", { n: 2 });
    const stopped = layer.stop();
    await sleep(50);
    hold.open();
    await stopped;
    expect(started).toEqual([1]);
    expect(await jobRows(jobs, "one_by_one")).toMatchObject([{ payload: { n: 2 }, locked: false, attempts: 0 }]);
  });

  it("gives up on a job after stopTimeoutMs: it is aborted, released and retried by another worker", async () => {
    const hold = gate();
    let aborted = false;
    const layer = jobs.layer("worker", { stopTimeoutMs: 600 });
    layer.register("stuck", async (_payload, job) => {
      job.signal.addEventListener("abort", () => {
        aborted = true;
      });
      await hold.opened; // ignores the signal
    });
    await layer.start();
    await layer.add("stuck", {}, { maxAttempts: 5 });
    await waitFor("the job to start", async () => (await jobRows(jobs, "stuck"))[0]?.locked);
    const t0 = Date.now();
    await layer.stop();
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(aborted).toBe(true);
    const [released] = await jobs.query("SELECT locked_at, attempts, last_error FROM graphile_worker.jobs WHERE task_identifier = 'stuck'");
    expect(released).toMatchObject({ locked_at: null, attempts: 1 });
    expect(released.last_error).toBeTruthy();

    let retried = false;
    const other = jobs.layer("worker");
    other.register("stuck", async (_payload, job) => {
      retried = job.attempts === 2;
    });
    await other.start();
    // graphile-worker's back-off after a first failure is e^1 ≈ 2.7 s.
    await waitFor("the retry", () => retried, 15_000);
    hold.open();
  });

  it("stops at once after a job's completion had to be recorded again (the database went away for a moment)", async () => {
    const layer = jobs.layer("worker", { stopTimeoutMs: 1_000 });
    const done: number[] = [];
    layer.register("blip", async (payload: { n: number }) => {
      // The job table goes away under the first job: recording its completion fails until it is back.
      if (payload.n === 1) await jobs.query("ALTER TABLE graphile_worker._private_jobs RENAME TO _private_jobs_away");
      done.push(payload.n);
    });
    await layer.start();
    await layer.add("blip", { n: 1 });
    await waitFor("the first job", () => done.includes(1));
    await sleep(300);
    await jobs.query("ALTER TABLE graphile_worker._private_jobs_away RENAME TO _private_jobs");
    await waitFor("the first completion recorded", async () => (await jobRows(jobs, "blip")).length === 0);
    // Later completions go through at the first attempt.
    await layer.add("blip", { n: 2 });
    await waitFor("the second completion recorded", async () => done.includes(2) && (await jobRows(jobs, "blip")).length === 0);

    const t0 = Date.now();
    const stopped = await Promise.race([layer.stop().then(() => true), sleep(5_000).then(() => false)]);
    expect(stopped, "stop() finished").toBe(true);
    // Gracefully: not after giving up on jobs at stopTimeoutMs.
    expect(Date.now() - t0).toBeLessThan(1_000);
  });

  it("can be called before start() and more than once", async () => {
    const layer = jobs.layer("worker");
    await Promise.all([layer.stop(), layer.stop()]);
    await expect(layer.start()).rejects.toThrow(/called once/);
  });
});
