// While PostgreSQL cannot be reached every request answers 503 UNAVAILABLE with Retry-After in
// the error envelope, never a 500: the errors pg, Prisma (through @prisma/adapter-pg) and the
// pool really raise when the server is away, is shut down under a session, or has no connection
// free go through the one error handler; and the whole app, on a database nobody listens on,
// says so on readiness, ingestion and the admin API. A statement that is wrong is still a 500.
import Fastify, { type FastifyInstance } from "fastify";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { loadConfig, type ResolvedConfig } from "../../src/config.ts";
import { createDb } from "../../src/db/client.ts";
import { freePort } from "../../src/db/embedded.ts";
import { buildApp } from "../../src/app/http.ts";
import { registerErrorHandling } from "../../src/http/errors.ts";
import { createSystem as createContext } from "../../src/app/system.ts";
import { createTestDatabase } from "../support/app.ts";
import { thrown } from "../support/http.ts";

/** Ends, from another session, the sessions of `databaseUrl` named `application` once they run a statement. */
async function terminateWhenBusy(application: string) {
  const admin = new pg.Client({ connectionString: inject("adminUrl") });
  await admin.connect();
  try {
    for (let i = 0; i < 200; i++) {
      const { rows } = await admin.query<{ n: number }>(
        "SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = $1 AND state = 'active'",
        [application],
      );
      if (rows[0]!.n > 0) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`no active session of ${application}`);
  } finally {
    await admin.end();
  }
}

const withApplication = (url: string, application: string) => {
  const u = new URL(url);
  u.searchParams.set("application_name", application);
  return u.toString();
};

/** A bare app with the project's error handler, throwing whatever it is given. */
function throwingApp(): { app: FastifyInstance; answer: (err: unknown) => Promise<{ status: number; retryAfter: unknown; body: any }> } {
  const app = Fastify({ logger: false });
  registerErrorHandling(app);
  let next: unknown = null;
  app.get("/fail", async () => {
    throw next;
  });
  return {
    app,
    answer: async (err) => {
      next = err;
      const res = await app.inject({ method: "GET", url: "/fail" });
      return { status: res.statusCode, retryAfter: res.headers["retry-after"], body: res.json() };
    },
  };
}

describe("errors of an unreachable database", () => {
  const { app, answer } = throwingApp();
  let databaseUrl: string;
  let closedUrl: string;
  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    const u = new URL(databaseUrl);
    u.port = String(await freePort()); // nothing listens there
    closedUrl = u.toString();
  });
  afterAll(() => app.close());

  const expect503 = async (err: unknown) => {
    const res = await answer(err);
    expect(res.status, String(err)).toBe(503);
    expect(res.retryAfter).toMatch(/^\d+$/);
    expect(res.body.error.code).toBe("UNAVAILABLE");
    expect(res.body.error.requestId).toBeTruthy();
    // The envelope's message is ours, not the driver's.
    expect(res.body.error.message).toBe("The database is unreachable; retry later");
  };

  it("pg: connection refused (ECONNREFUSED)", async () => {
    const pool = new pg.Pool({ connectionString: closedUrl });
    const err = await thrown(() => pool.query("SELECT 1"));
    await pool.end();
    expect((err as { code?: string }).code).toBe("ECONNREFUSED");
    await expect503(err);
  });

  it("pg: the session ended by the server (57P01, as a stop or restart does), then the lost client used again", async () => {
    const client = new pg.Client({ connectionString: withApplication(databaseUrl, "tidings-unit-57p01") });
    const events: Error[] = [];
    client.on("error", (e) => events.push(e));
    await client.connect();
    const [err] = await Promise.all([thrown(() => client.query("SELECT pg_sleep(10)")), terminateWhenBusy("tidings-unit-57p01")]);
    expect((err as { code?: string }).code).toBe("57P01");
    await expect503(err);
    await expect.poll(() => events.length).toBeGreaterThan(0);
    expect(events[0]!.message).toMatch(/Connection terminated unexpectedly|terminating connection/);
    await expect503(events[0]);
    const again = await thrown(() => client.query("SELECT 1"));
    await expect503(again);
    await client.end().catch(() => {});
  });

  it("pg: no connection free within the pool's connectionTimeoutMillis", async () => {
    // Long enough for the first connection on a loaded machine; the second waits it out.
    const pool = new pg.Pool({ connectionString: databaseUrl, max: 1, connectionTimeoutMillis: 2000 });
    const held = await pool.connect();
    const err = await thrown(() => pool.connect());
    held.release();
    await pool.end();
    expect((err as Error).message).toMatch(/timeout/);
    await expect503(err);
  });

  it("Prisma: the server cannot be reached (P1001), for a model query, raw SQL and a transaction", async () => {
    const db = createDb(closedUrl, 2);
    try {
      const model = await thrown(() => db.prisma.apiKey.findUnique({ where: { hash: "x" } }));
      expect((model as { code?: string }).code).toBe("P1001");
      await expect503(model);
      await expect503(await thrown(() => db.prisma.$queryRaw`SELECT 1`));
      await expect503(await thrown(() => db.prisma.$transaction(async (tx) => tx.apiKey.count())));
    } finally {
      await db.close().catch(() => {});
    }
  });

  it("Prisma: the session ended by the server during a statement", async () => {
    const db = createDb(withApplication(databaseUrl, "tidings-unit-prisma"), 1);
    try {
      const [err] = await Promise.all([thrown(() => db.prisma.$queryRaw`SELECT pg_sleep(10)`), terminateWhenBusy("tidings-unit-prisma")]);
      await expect503(err);
    } finally {
      await db.close().catch(() => {});
    }
  });

  it("a wrong statement, another service refusing a connection, or any other error is still a 500 that hides its message", async () => {
    const pool = new pg.Pool({ connectionString: databaseUrl });
    const sqlError = await thrown(() => pool.query("SELECT 1 / 0"));
    await pool.end();
    const fetchError = await thrown(() => fetch(`http://127.0.0.1:${new URL(closedUrl).port}/`));
    expect((fetchError as Error).cause).toMatchObject({ code: "ECONNREFUSED" });
    for (const err of [sqlError, fetchError, new Error("boom")]) {
      const res = await answer(err);
      expect(res.status).toBe(500);
      expect(res.retryAfter).toBeUndefined();
      expect(res.body.error).toMatchObject({ code: "INTERNAL", message: "Internal error" });
    }
  });
});

describe("the app on a database nobody listens on", () => {
  let app: FastifyInstance;
  let close: () => Promise<void>;
  beforeAll(async () => {
    const url = new URL(await createTestDatabase());
    url.port = String(await freePort());
    const config: ResolvedConfig = {
      ...loadConfig({ LOG_LEVEL: "silent", TIDINGS_KEY_CACHE_SECONDS: "0" }),
      databaseUrl: url.toString(),
      rootKey: "test-root-key-0123456789abcdef",
      secretKey: "test-secret-key-0123456789abcdef0123456789",
      maxEventLoopDelayMs: 0,
    };
    const ctx = createContext(config, url.toString());
    app = await buildApp(ctx);
    close = async () => {
      await app.close();
      await ctx.jobs.stop();
      await ctx.db.close();
    };
  });
  afterAll(() => close());

  const key = (prefix: string) => `${prefix}${"k".repeat(43)}`;

  it.each([
    ["readiness", "GET", "/health/ready", {}],
    ["ingestion", "POST", "/v1/track", { authorization: `Basic ${key("tdw_")}`, "content-type": "application/json" }],
    ["the admin API", "GET", "/api/admin/segments", { authorization: `Bearer ${key("tda_")}` }],
    ["the root API", "GET", "/api/admin/workspaces", { authorization: "Bearer test-root-key-0123456789abcdef" }],
  ] as const)("%s answers 503 UNAVAILABLE with Retry-After", async (_what, method, url, headers) => {
    const res = await app.inject({ method, url, headers, ...(method === "POST" ? { payload: { userId: "u1", event: "E" } } : {}) });
    expect(res.statusCode, res.body).toBe(503);
    expect(res.headers["retry-after"]).toMatch(/^\d+$/);
    expect(res.json().error.code).toBe("UNAVAILABLE");
  });

  it("liveness still answers: the process is up", async () => {
    expect((await app.inject({ method: "GET", url: "/health/live" })).statusCode).toBe(200);
  });
});
