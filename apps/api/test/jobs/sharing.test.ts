// Several workers on one database: jobs shared, named queues serial, job keys de-duplicating.
import { beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../support/app.ts";
import { gate, type Jobs, jobRows, jobsOn, waitFor } from "./support.ts";

let jobs: Jobs;
beforeAll(async () => {
  jobs = jobsOn(await createTestDatabase());
});

describe("two workers", () => {
  it("share the jobs, each run once", async () => {
    // Each job waits until four run at once: two workers of concurrency 2 can, one cannot.
    const runs: { worker: string; n: number }[] = [];
    let active = 0;
    let peak = 0;
    for (const worker of ["a", "b"]) {
      const layer = jobs.layer("worker", { concurrency: 2 });
      layer.register("shared", async (payload: { n: number }) => {
        runs.push({ worker, n: payload.n });
        active++;
        peak = Math.max(peak, active);
        try {
          await waitFor("four jobs running at once", () => peak >= 4, 5000);
        } finally {
          active--;
        }
      });
      await layer.start();
    }
    const adder = jobs.layer("api");
    for (let n = 0; n < 8; n++) await adder.add("shared", { n });
    await waitFor("every job to finish", async () => runs.length === 8 && active === 0 && (await jobRows(jobs, "shared")).length === 0);
    expect(peak).toBe(4);
    expect(runs.map((r) => r.n).sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(new Set(runs.map((r) => r.worker))).toEqual(new Set(["a", "b"]));
  });

  it("never run two jobs of one named queue at once", async () => {
    let queued = 0;
    let queuedPeak = 0;
    let free = 0;
    let freePeak = 0;
    const done: string[] = [];
    for (let i = 0; i < 2; i++) {
      const layer = jobs.layer("worker", { concurrency: 3 });
      layer.register("serial", async (payload: { n: number }) => {
        queued++;
        queuedPeak = Math.max(queuedPeak, queued);
        await new Promise((resolve) => setTimeout(resolve, 30));
        queued--;
        done.push(`q${payload.n}`);
      });
      layer.register("parallel", async (payload: { n: number }) => {
        free++;
        freePeak = Math.max(freePeak, free);
        await new Promise((resolve) => setTimeout(resolve, 150));
        free--;
        done.push(`p${payload.n}`);
      });
      await layer.start();
    }
    const adder = jobs.layer("api");
    for (let n = 0; n < 12; n++) await adder.add("serial", { n }, { queue: "one-at-a-time" });
    for (let n = 0; n < 6; n++) await adder.add("parallel", { n });
    await waitFor("every job to finish", () => done.length === 18, 20_000);
    expect(queuedPeak).toBe(1);
    // The same workers do run jobs side by side when they are not in a queue.
    expect(freePeak).toBeGreaterThan(1);
  });
});

describe("job keys", () => {
  it("re-adding a key while its job runs creates a new job; the running one is not retried", async () => {
    const hold = gate();
    const started: number[] = [];
    const finished: number[] = [];
    const layer = jobs.layer("worker", { concurrency: 2 });
    layer.register("keyed", async (payload: { n: number; fail?: boolean }) => {
      started.push(payload.n);
      if (payload.n === 1) await hold.opened;
      if (payload.fail) throw new Error("the first run fails");
      finished.push(payload.n);
    });
    await layer.start();
    await layer.add("keyed", { n: 1, fail: true }, { key: "segment:42" });
    await waitFor("the first job to start", () => started.includes(1));
    const [first] = await jobRows(jobs, "keyed");

    await layer.add("keyed", { n: 2 }, { key: "segment:42" });
    // A second job exists (the wake-up is kept) and runs while the first is still running.
    await waitFor("the second job to run", () => finished.includes(2));
    expect(started).toEqual([1, 2]);
    await waitFor("the second job to be deleted once done", async () => (await jobRows(jobs, "keyed")).length === 1);
    const during = await jobRows(jobs, "keyed");
    expect(during).toMatchObject([{ id: first!.id, key: null, locked: true }]);
    // graphile-worker took the key off the running job and used up its attempts.
    expect(during[0]!.attempts).toBe(during[0]!.max_attempts);

    hold.open();
    await waitFor("the first job to fail", async () => !(await jobRows(jobs, "keyed"))[0]?.locked);
    // Failed but out of attempts: kept as permanently failed, never run again.
    const after = await jobRows(jobs, "keyed");
    expect(after).toHaveLength(1);
    expect(after[0]).toMatchObject({ id: first!.id, key: null, locked: false });
    expect(after[0]!.attempts).toBe(after[0]!.max_attempts);
    expect(started).toEqual([1, 2]);
  });

  it("re-adding a key while its job waits replaces that job", async () => {
    const ran: number[] = [];
    const api = jobs.layer("api");
    await api.start();
    const later = new Date(Date.now() + 3600_000);
    await api.add("waiting", { n: 1 }, { key: "w", runAt: later });
    await api.add("waiting", { n: 2 }, { key: "w", runAt: later });
    const waiting = await jobRows(jobs, "waiting");
    expect(waiting).toHaveLength(1);
    expect(waiting[0]!.payload).toEqual({ n: 2 });

    // preserve_run_at keeps the waiting job's time; replace (the default) brings it forward.
    await api.add("waiting", { n: 3 }, { key: "w", keyMode: "preserve_run_at" });
    const preserved = await jobRows(jobs, "waiting");
    expect(preserved).toHaveLength(1);
    expect(preserved[0]!.payload).toEqual({ n: 3 });
    expect(preserved[0]!.run_at.getTime()).toBe(later.getTime());

    const worker = jobs.layer("worker");
    worker.register("waiting", async (payload: { n: number }) => {
      ran.push(payload.n);
    });
    await worker.start();
    await api.add("waiting", { n: 4 }, { key: "w" });
    await waitFor("the job to run", async () => ran.length > 0 && (await jobRows(jobs, "waiting")).length === 0);
    expect(ran).toEqual([4]);
  });
});

describe("lanes", () => {
  it("jobs of the send lane holding every one of its slots never delay the default lane's", async () => {
    const layer = jobs.layer("worker", { concurrency: 2 });
    const release = gate();
    let sending = 0;
    layer.register(
      "long-send",
      async () => {
        sending++;
        await release.opened;
      },
      { lane: "send" },
    );
    let quick = 0;
    layer.register("quick", async () => {
      quick++;
    });
    await layer.start();
    try {
      for (let i = 0; i < 3; i++) await layer.add("long-send", {});
      await waitFor("send jobs to hold the send lane", () => sending >= 1);
      await new Promise((r) => setTimeout(r, 300));
      await layer.add("quick", {});
      await layer.add("quick", {});
      await waitFor("the default lane's jobs to run beside it", () => quick === 2);
      expect(sending).toBe(1); // the send lane has 1 of the 2 slots
    } finally {
      release.open();
      await layer.stop();
    }
  });
});
