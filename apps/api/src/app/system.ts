// The composition root: every capability built from the configuration, in floor order, each from
// the narrow dependencies it names; the one dependency between capabilities that runs upward
// (segment enters and drained changes → journeys) is wired here, once, through the outbox's
// consumers and the engine's enter hooks the runtime registers.
import type { ResolvedConfig } from "../config.ts";
import { createApply } from "../apply/index.ts";
import { createAuth } from "../auth/index.ts";
import { createBroadcasts } from "../broadcasts/index.ts";
import { createDb, type Db } from "../db/client.ts";
import { registerFailingGauge } from "../db/failing.ts";
import { createRegistry, type Registry } from "../http/metrics.ts";
import type { Module } from "../http/module.ts";
import { createIngest } from "../ingest/index.ts";
import { createJobLayer, type JobLayer, levelLog, registerJobGauges } from "../jobs/index.ts";
import { createJourneys } from "../journeys/index.ts";
import { errorText } from "../lib/errors.ts";
import { createPolicies } from "../policies/index.ts";
import { createMessaging } from "../messaging/index.ts";
import { OutboundGuard } from "../outbound/index.ts";
import { OutboxConsumers, registerOutboxGauge } from "../outbox/index.ts";
import { createRetention } from "../retention/index.ts";
import { createSegments, type SegmentEngine } from "../segments/index.ts";
import { createSubscriptionGroups } from "../subscription-groups/index.ts";
import { createTemplates } from "../templates/index.ts";
import { createUsers } from "../users/index.ts";

export interface SystemOptions {
  /** The segment engine's and the journey runtime's clock (ms since epoch); tests move it. */
  clock?: () => number;
  /** When the segment engine treats a drained batch as heavy ingestion (tests force it). */
  segmentsHeavyIngestion?: { min: number; share: number };
  /** Retention's rows per statement and slice length (tests make them small). */
  retentionSlices?: { batchSize: number; sliceMs: number };
  /** Events waiting for ingestion's commit beyond which requests get 503 (default 100 000; tests make it small). */
  ingestMaxQueuedEvents?: number;
}

/** The shared ground every capability is built on. */
function ground(config: ResolvedConfig, databaseUrl: string) {
  const db = createDb(databaseUrl, config.dbPoolSize);
  const log = levelLog(config.logLevel);
  const jobs = createJobLayer({
    connectionString: databaseUrl,
    role: config.role,
    concurrency: config.workerConcurrency,
    sendConcurrency: config.sendConcurrency,
    log,
  });
  const registry = createRegistry();
  registerJobGauges(registry, jobs);
  registerFailingGauge(registry, db.pool);
  registerOutboxGauge(registry, db.pool);
  return { db, log, jobs, registry };
}

type Ground = ReturnType<typeof ground> & { clock: () => number; guard: OutboundGuard; outbox: OutboxConsumers; databaseUrl: string };

/** The capabilities that decide and send messages: templates, delivery policies, messaging, and its sources journeys and broadcasts. */
function sending(g: Ground, config: ResolvedConfig, segments: SegmentEngine) {
  const { db, log, jobs, registry, clock, guard, outbox } = g;
  const { pool, prisma } = db;
  const templates = createTemplates({ prisma, guard, config });
  const policies = createPolicies({ prisma, registry });
  const messaging = createMessaging({
    pool,
    prisma,
    jobs,
    registry,
    guard,
    renders: templates.renders,
    gatekeeper: policies.gatekeeper,
    connectionString: g.databaseUrl,
    config,
    log,
  });
  const { sends } = messaging;
  const journeys = createJourneys({ pool, prisma, jobs, registry, sends, segments, outbox, clock, log: (msg) => log("error", msg) });
  const broadcasts = createBroadcasts({ pool, prisma, jobs, registry, segments, sends });
  return {
    templates,
    messaging,
    journeys,
    broadcasts,
    modules: [templates, policies, messaging, journeys, broadcasts].map((c) => c.module),
  };
}

export function createSystem(config: ResolvedConfig, databaseUrl: string, options: SystemOptions = {}) {
  const g: Ground = {
    ...ground(config, databaseUrl),
    clock: options.clock ?? Date.now,
    guard: new OutboundGuard(config.outboundAllowedHosts),
    outbox: new OutboxConsumers(),
    databaseUrl,
  };
  const { db, log, jobs, registry, clock, guard } = g;
  const { pool, prisma } = db;
  const auth = createAuth({ prisma, keyCacheSeconds: config.keyCacheSeconds, rootKey: config.rootKey });
  const groups = createSubscriptionGroups({ prisma, keys: config, publicUrl: config.publicUrl });
  const ingest = createIngest({
    pool,
    registry,
    writeKeyGuard: auth.writeKeyGuard,
    config,
    maxQueuedEvents: options.ingestMaxQueuedEvents,
  });
  const retention = createRetention({ pool, jobs, registry, policy: config.retention, clock, slices: options.retentionSlices });
  const segments = createSegments({
    pool,
    prisma,
    jobs,
    registry,
    clock,
    consumers: g.outbox,
    heavyIngestion: options.segmentsHeavyIngestion,
    log: (msg, err) => log("error", `${msg}: ${errorText(err)}`),
  });
  const { templates, messaging, journeys, broadcasts, ...sent } = sending(g, config, segments.engine);
  const users = createUsers({ prisma });
  const apply = createApply({ prisma, guard, liquid: templates.renders });

  const below = [auth, groups, ingest, retention, segments].map((c) => c.module);
  const modules: Module[] = [...below, ...sent.modules, users.module, apply.module];
  return {
    config,
    db,
    jobs,
    registry,
    auth,
    modules,
    guard,
    ingestor: ingest.ingestor,
    segments: segments.engine,
    renders: templates.renders,
    sends: messaging.sends,
    journeys: journeys.runtime,
    retention: retention.retention,
    /** Stops what runs (after the HTTP server closed): the job layer, then every module, then the database. */
    async close() {
      await jobs.stop();
      for (const m of [...modules].reverse()) await m.close?.();
      await db.close();
    },
  };
}

export type System = ReturnType<typeof createSystem>;
export type { Db, JobLayer, Registry };
