// Ingestion: the Segment-compatible public endpoints, and the group-commit Ingestor that stores
// events, profiles and their outbox rows in one commit.
import type pg from "pg";
import type { ResolvedConfig } from "../config.ts";
import type { Module } from "../http/module.ts";
import type { Registry } from "../http/metrics.ts";
import { Ingestor } from "./ingestor.ts";
import { ingestMetrics } from "./metrics.ts";
import { type IngestRouteDeps, ingestRoutes } from "./routes.ts";

export { MAX_TIME, MIN_TIME } from "./normalize.ts";

export interface IngestDeps {
  pool: pg.Pool;
  registry: Registry;
  writeKeyGuard: IngestRouteDeps["writeKeyGuard"];
  config: Pick<ResolvedConfig, "limits" | "corsOrigins" | "ingestCommits" | "dbPoolSize">;
  /** Events waiting for a commit beyond which requests get 503 (default 100 000). */
  maxQueuedEvents?: number | undefined;
}

export function createIngest({ pool, registry, writeKeyGuard, config, maxQueuedEvents = 100_000 }: IngestDeps) {
  const metrics = ingestMetrics(registry);
  const ingestor = new Ingestor(pool, {
    // One commit at a time gathers the largest groups; measured fastest on small machines.
    maxConcurrentCommits: Math.min(config.ingestCommits, config.dbPoolSize - 1),
    maxEventsPerCommit: 5000,
    maxQueuedEvents,
    onCommit: (_events, stored, ms) => {
      metrics.eventsStored.inc(stored);
      metrics.commitSeconds.observe(ms / 1000);
    },
  });
  const routes = ingestRoutes({ ingestor, metrics, writeKeyGuard, limits: config.limits, corsOrigins: config.corsOrigins });
  return { ingestor, module: { publicRoutes: routes, close: () => ingestor.close() } satisfies Module };
}
