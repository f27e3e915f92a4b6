// A PostgreSQL that is up but refuses the work — turned read-only (25006), out of disk (53100),
// of other resources (53000), of memory (53200) — answers 503 UNAVAILABLE with Retry-After and our
// own message, never a 500 or the server's words; and once the condition clears the same process
// stores again, its background jobs included. Read-only is the real thing (ALTER DATABASE … SET
// default_transaction_read_only); a full disk cannot be made safely on a shared machine, so a
// trigger on `events` raises the real SQLSTATE 53100 from PostgreSQL as a full disk would.
import { randomUUID } from "node:crypto";
import Fastify, { type FastifyInstance } from "fastify";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { createDb } from "../../src/db/client.ts";
import { registerErrorHandling } from "../../src/http/errors.ts";
import { createTestApp, createTestDatabase, type TestApp } from "../support/app.ts";
import { basic, bearer, request, type Res, thrown } from "../support/http.ts";

const MESSAGE = "The database cannot take this request right now; retry later";

const raiseStatement = (sqlState: string) => `RAISE EXCEPTION 'simulated: % on /pgdata/base', '${sqlState}' USING ERRCODE = '${sqlState}'`;
const raise = (sqlState: string) => `DO $$ BEGIN ${raiseStatement(sqlState)}; END $$`;

function expectRefusal(res: { status: number; retryAfter: string | null | undefined; body: any; text: string }) {
  expect(res.status, res.text).toBe(503);
  expect(res.retryAfter).toMatch(/^\d+$/);
  expect(res.body).toEqual({ error: { code: "UNAVAILABLE", message: MESSAGE, requestId: expect.any(String) } });
  // Nothing of PostgreSQL's own words (file paths, settings) reaches the client.
  expect(res.text).not.toMatch(/simulated|pgdata|read-only|transaction/);
}

describe("errors PostgreSQL raises when it refuses the work", () => {
  const app: FastifyInstance = Fastify({ logger: false });
  registerErrorHandling(app);
  let next: unknown = null;
  app.get("/fail", async () => {
    throw next;
  });
  const answer = async (err: unknown) => {
    next = err;
    const res = await app.inject({ method: "GET", url: "/fail" });
    return { status: res.statusCode, retryAfter: res.headers["retry-after"] as string | undefined, body: res.json(), text: res.body };
  };
  let databaseUrl: string;
  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
  });
  afterAll(() => app.close());

  it.each(["53000", "53100", "53200"])("pg and Prisma (model query, raw SQL, transaction): %s → 503", async (state) => {
    const pool = new pg.Pool({ connectionString: databaseUrl });
    const pgError = await thrown(() => pool.query(raise(state)));
    await pool.end();
    expect((pgError as { code?: string }).code).toBe(state);
    expectRefusal(await answer(pgError));

    const db = createDb(databaseUrl, 2);
    const admin = new pg.Client({ connectionString: databaseUrl });
    await admin.connect();
    // A model write that a trigger refuses, as a full disk would refuse the insert.
    const fn = `refuse_${state}`;
    await admin.query(`CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN ${raiseStatement(state)}; END $f$`);
    await admin.query(`CREATE TRIGGER ${fn} BEFORE INSERT ON workspaces FOR EACH STATEMENT EXECUTE FUNCTION ${fn}()`);
    try {
      expectRefusal(await answer(await thrown(() => db.prisma.workspace.create({ data: { name: `w-${randomUUID()}` } }))));
      expectRefusal(await answer(await thrown(() => db.prisma.$executeRawUnsafe(raise(state)))));
      expectRefusal(
        await answer(
          await thrown(() => db.prisma.$transaction(async (tx) => tx.workspace.create({ data: { name: `w-${randomUUID()}` } }))),
        ),
      );
    } finally {
      await admin.query(`DROP TRIGGER ${fn} ON workspaces; DROP FUNCTION ${fn}()`);
      await admin.end();
      await db.close();
    }
  });

  it("a read-only session (25006), through pg and Prisma → 503", async () => {
    const readOnly = new URL(databaseUrl);
    readOnly.searchParams.set("options", "-c default_transaction_read_only=on");
    const pool = new pg.Pool({ connectionString: readOnly.toString() });
    const pgError = await thrown(() => pool.query("CREATE TABLE nope (a int)"));
    await pool.end();
    expect((pgError as { code?: string }).code).toBe("25006");
    expectRefusal(await answer(pgError));
    const db = createDb(readOnly.toString(), 1);
    try {
      const model = await thrown(() => db.prisma.workspace.create({ data: { name: `w-${randomUUID()}` } }));
      expectRefusal(await answer(model));
      expectRefusal(await answer(await thrown(() => db.prisma.$executeRaw`CREATE TABLE nope (a int)`)));
      // Reads still work on a read-only database.
      expect(await db.prisma.workspace.count()).toBeGreaterThanOrEqual(0);
    } finally {
      await db.close();
    }
  });

  it("other errors of a statement stay what they were: a 500 that hides its message", async () => {
    const pool = new pg.Pool({ connectionString: databaseUrl });
    const err = await thrown(() => pool.query(raise("22012")));
    await pool.end();
    const res = await answer(err);
    expect(res.status).toBe(500);
    expect(res.body.error).toMatchObject({ code: "INTERNAL", message: "Internal error" });
  });
});

describe("the app on a database that turns read-only or runs out of disk, then recovers", () => {
  let t: TestApp;
  let admin: pg.Client;
  let dbName: string;
  beforeAll(async () => {
    t = await createTestApp();
    dbName = new URL(t.databaseUrl).pathname.slice(1);
    admin = new pg.Client({ connectionString: inject("adminUrl") });
    admin.on("error", () => {});
    await admin.connect();
  });
  afterAll(async () => {
    await admin.query(`ALTER DATABASE ${dbName} RESET default_transaction_read_only`).catch(() => {});
    await admin.end();
    await t.close();
  });

  /** Ends every session of the test database but ours: new ones take the database's settings. */
  const reconnectAll = () =>
    admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [dbName]);

  const track = (userId: string) =>
    request(t.url, "POST", "/v1/track", {
      headers: basic(t.workspace.writeKey),
      body: { userId, event: "Bought", messageId: `m-${randomUUID()}` },
    });

  /** Sends events until `done` says so; returns every answer (the caller counts them). */
  async function trackUntil(done: (res: Res) => boolean, prefix: string, timeoutMs = 20_000) {
    const answers: Res[] = [];
    const deadline = Date.now() + timeoutMs;
    for (let i = 0; Date.now() < deadline; i++) {
      const res = await track(`${prefix}-${i}`);
      answers.push(res);
      if (res.status >= 500 && res.status !== 503) throw new Error(`a ${res.status}: ${res.text}`);
      if (done(res)) return answers;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`no such answer within ${timeoutMs} ms: ${answers.map((a) => a.status).join(",")}`);
  }

  const asRefusal = (res: Res) => ({ status: res.status, retryAfter: res.headers.get("retry-after"), body: res.body, text: res.text });
  const isRefusal = (res: Res) => res.status === 503 && res.body?.error?.message === MESSAGE;

  async function members(segmentId: string): Promise<string[]> {
    const res = await request(t.url, "GET", `/api/admin/segments/${segmentId}/users?limit=500`, { headers: bearer(t.workspace.adminKey) });
    expect(res.status, res.text).toBe(200);
    return res.body.items.map((u: { userId: string }) => u.userId).sort();
  }

  it("read-only: ingestion answers 503 (reads still 200), then stores again, and the job layer catches up", async () => {
    const segment = await request(t.url, "PUT", "/api/admin/segments", {
      headers: bearer(t.workspace.adminKey),
      body: { name: "buyers", definition: { entryNode: { type: "Performed", id: "p", event: "Bought" } } },
    });
    expect(segment.status, segment.text).toBe(200);
    expect((await track("before")).status).toBe(204);

    let refused = 0;
    await admin.query(`ALTER DATABASE ${dbName} SET default_transaction_read_only = on`);
    try {
      await reconnectAll();
      const during = await trackUntil(isRefusal, "during");
      // Between the cut and the first refusal the pools reconnect: those answers are 503s too, never a 500.
      expect(during.map((r) => r.status).filter((s) => s !== 503)).toEqual([]);
      expectRefusal(asRefusal(during.at(-1)!));
      // A few more while it stays read-only: each a 503 with Retry-After, none a 500.
      for (let i = 0; i < 5; i++) expectRefusal(asRefusal(await track(`still-${i}`)));
      refused = during.length + 5;
      const read = await request(t.url, "GET", "/api/admin/segments", { headers: bearer(t.workspace.adminKey) });
      expect(read.status, read.text).toBe(200);
      const write = await request(t.url, "PUT", "/api/admin/segments", { headers: bearer(t.workspace.adminKey), body: { name: "later" } });
      expectRefusal(asRefusal(write));
      // Let the job layer poll a read-only database for a while: it must not stop.
      await new Promise((r) => setTimeout(r, 1500));
    } catch (err) {
      // Not left read-only for the next test.
      await admin.query(`ALTER DATABASE ${dbName} RESET default_transaction_read_only`);
      await reconnectAll();
      throw err;
    }

    await admin.query(`ALTER DATABASE ${dbName} RESET default_transaction_read_only`);
    const cleared = Date.now();
    await reconnectAll();
    const after = await trackUntil((r) => r.status === 204, "after");
    const recoveryMs = Date.now() - cleared;
    expect(after.filter((r) => r.status !== 204 && r.status !== 503)).toEqual([]);
    expect(recoveryMs).toBeLessThan(10_000);
    // Stored after recovery, and the segment engine (jobs) makes the new buyer a member.
    const lastUser = `after-${after.length - 1}`;
    await expect
      .poll(() => members(segment.body.id), { timeout: 15_000, interval: 200 })
      .toEqual(expect.arrayContaining(["before", lastUser]));
    // What was refused was not stored.
    expect(await members(segment.body.id)).not.toContain("still-0");
    console.log(`read-only: ${refused} answers while read-only, all 503; recovered ${recoveryMs} ms after the reset`);
  }, 60_000);

  it("disk full (53100 raised by PostgreSQL on insert into events): ingestion answers 503, other writes go on, then it stores again", async () => {
    // The trigger is installed on the test database itself (the admin session is on another).
    const ddl = new pg.Client({ connectionString: t.databaseUrl });
    await ddl.connect();
    try {
      await ddl.query(`CREATE FUNCTION simulate_disk_full() RETURNS trigger LANGUAGE plpgsql AS $f$
        BEGIN RAISE EXCEPTION 'could not extend file "base/16384/16385": No space left on device' USING ERRCODE = 'disk_full'; END $f$`);
      await ddl.query("CREATE TRIGGER simulate_disk_full BEFORE INSERT ON events FOR EACH STATEMENT EXECUTE FUNCTION simulate_disk_full()");
      for (let i = 0; i < 5; i++) expectRefusal(asRefusal(await track(`full-${i}`)));
      const batch = await request(t.url, "POST", "/api/public/apps/batch", {
        headers: basic(t.workspace.writeKey),
        body: { batch: [{ type: "track", userId: "full-batch", event: "Bought" }] },
      });
      expectRefusal(asRefusal(batch));
      const other = await request(t.url, "PUT", "/api/admin/segments", {
        headers: bearer(t.workspace.adminKey),
        body: { name: `n-${randomUUID()}` },
      });
      expect(other.status, other.text).toBe(200);
    } finally {
      await ddl.query("DROP TRIGGER IF EXISTS simulate_disk_full ON events; DROP FUNCTION IF EXISTS simulate_disk_full()");
      await ddl.end();
    }
    expect((await track("after-disk")).status).toBe(204);
    const stored = await request(t.url, "GET", "/api/admin/events?userId=after-disk", { headers: bearer(t.workspace.adminKey) });
    expect(stored.body.items).toHaveLength(1);
    const refused = await request(t.url, "GET", "/api/admin/events?userId=full-0", { headers: bearer(t.workspace.adminKey) });
    expect(refused.body.items).toHaveLength(0);
  }, 60_000);
});
