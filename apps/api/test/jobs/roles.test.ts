// Who runs jobs (only the all and worker roles), transactional enqueueing, LISTEN wake-ups.
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { beforeAll, describe, expect, it } from "vitest";
import { prismaExecute } from "../../src/db/sql.ts";
import { PrismaClient } from "../../src/generated/prisma/client.ts";
import { addJobQuery } from "../../src/jobs/index.ts";
import { createTestDatabase } from "../support/app.ts";
import { type Jobs, jobRows, jobsOn, POLL_MS, sleep, waitFor } from "./support.ts";

let databaseUrl: string;
let jobs: Jobs;
beforeAll(async () => {
  databaseUrl = await createTestDatabase();
  jobs = jobsOn(databaseUrl);
});

describe("roles", () => {
  it("an api process enqueues but never runs jobs; a worker runs them", async () => {
    const ranIn: string[] = [];
    const api = jobs.layer("api");
    api.register("role_probe", async () => {
      ranIn.push("api");
    });
    await api.start();
    await api.add("role_probe", { n: 1 });
    // Several poll intervals: a runner in the api process would have taken the job by now.
    await sleep(POLL_MS * 8);
    expect(ranIn).toEqual([]);
    expect(await jobRows(jobs, "role_probe")).toMatchObject([{ locked: false, attempts: 0 }]);

    const worker = jobs.layer("worker");
    worker.register("role_probe", async () => {
      ranIn.push("worker");
    });
    await worker.start();
    await waitFor("the worker to run the job", () => ranIn.length > 0);
    expect(ranIn).toEqual(["worker"]);
    await waitFor("the job to be deleted once done", async () => (await jobRows(jobs, "role_probe")).length === 0);
  });

  it("role all runs jobs", async () => {
    const all = jobs.layer("all");
    const seen: unknown[] = [];
    all.register("all_probe", async (payload) => {
      seen.push(payload);
    });
    await all.start();
    await all.add("all_probe", { hello: "world" });
    await waitFor("the job to run", () => seen.length > 0);
    expect(seen).toEqual([{ hello: "world" }]);
  });

  it("refuses to register, schedule or listen after start()", async () => {
    const layer = jobs.layer("api");
    await layer.start();
    expect(() => layer.register("late", async () => {})).toThrow(/before start/);
    expect(() => layer.recurring("late", 1)).toThrow(/before start/);
    expect(() => layer.listen("late", () => {})).toThrow(/before start/);
  });
});

describe("enqueueing inside the caller's transaction", () => {
  const ran: number[] = [];
  beforeAll(async () => {
    const worker = jobs.layer("worker");
    worker.register("tx_probe", async (payload: { n: number }) => {
      ran.push(payload.n);
    });
    await worker.start();
  });

  it("with a pg client: a rolled-back job never exists, a committed one runs", async () => {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      await client.query("BEGIN");
      await client.query(addJobQuery("tx_probe", { n: 1 }));
      await client.query("ROLLBACK");

      await client.query("BEGIN");
      await client.query(addJobQuery("tx_probe", { n: 2 }));
      // Not visible to workers before the commit.
      await sleep(POLL_MS * 4);
      expect(ran).not.toContain(2);
      await client.query("COMMIT");
    } finally {
      await client.end();
    }
    await waitFor("the committed job to run", () => ran.includes(2));
    // Done, it is deleted; and the rolled-back job left no row that could run later.
    await waitFor("no job left", async () => (await jobRows(jobs, "tx_probe")).length === 0);
    expect(ran).not.toContain(1);
  });

  it("with Prisma (prismaExecute in $transaction)", async () => {
    const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
    const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
    try {
      await expect(
        prisma.$transaction(async (tx) => {
          await prismaExecute(tx, addJobQuery("tx_probe", { n: 3 }));
          throw new Error("roll back");
        }),
      ).rejects.toThrow("roll back");
      await prisma.$transaction(async (tx) => {
        await prismaExecute(tx, addJobQuery("tx_probe", { n: 4 }, { runAt: new Date(Date.now() - 1000), maxAttempts: 3 }));
      });
      await waitFor("the committed job to run", () => ran.includes(4));
      await waitFor("no job left", async () => (await jobRows(jobs, "tx_probe")).length === 0);
      expect(ran).not.toContain(3);
    } finally {
      await prisma.$disconnect();
      await pool.end();
    }
  });
});

describe("listen", () => {
  it("delivers notifications in worker processes only", async () => {
    const got: string[] = [];
    const worker = jobs.layer("worker");
    worker.listen("tidings_test_wake", (payload) => {
      got.push(`worker:${payload}`);
    });
    const api = jobs.layer("api");
    api.listen("tidings_test_wake", (payload) => {
      got.push(`api:${payload}`);
    });
    await Promise.all([worker.start(), api.start()]);
    await jobs.query("SELECT pg_notify('tidings_test_wake', 'ws-1')");
    await waitFor("the notification", () => got.length > 0);
    await jobs.query("SELECT pg_notify('tidings_test_wake', 'ws-2')");
    await waitFor("the second notification", () => got.length > 1);
    expect(got).toEqual(["worker:ws-1", "worker:ws-2"]);
  });

  it("reconnects when its connection is lost, then calls `resumed` (what was notified meanwhile is lost)", async () => {
    const got: string[] = [];
    let resumed = 0;
    const worker = jobs.layer("worker");
    worker.listen(
      "tidings_test_reconnect",
      (payload) => {
        got.push(payload);
      },
      { resumed: () => void resumed++ },
    );
    await worker.start();
    expect(resumed, "not at the first connection").toBe(0);
    const killed = await jobs.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'tidings-listen' AND query ILIKE '%tidings_test_reconnect%'",
    );
    expect(killed).toHaveLength(1);
    await waitFor("a notification after the reconnection", async () => {
      await jobs.query("SELECT pg_notify('tidings_test_reconnect', 'again')");
      await sleep(50);
      return got.length > 0;
    });
    expect(got[0]).toBe("again");
    expect(resumed).toBe(1);
  });
});
