// Segments: audience definitions, their hand-set members, and the segment engine that keeps every
// segment's membership current (docs/segments.md).
import type pg from "pg";
import client from "prom-client";
import type { PrismaClient } from "../db/client.ts";
import type { JobLayer } from "../jobs/index.ts";
import type { Registry } from "../http/metrics.ts";
import type { Module } from "../http/module.ts";
import type { OutboxConsumers } from "../outbox/index.ts";
import { SegmentEngine, type SegmentEngineOptions } from "./engine/index.ts";
import { segmentRoutes } from "./routes.ts";

export { parseStoredDefinition } from "./engine/compile.ts";
export { type EnterHook, membersNow } from "./engine/evaluate.ts";
export type { SegmentEngine } from "./engine/index.ts";
export { findSegment, upsertSegment } from "./service.ts";

export interface SegmentsDeps {
  pool: pg.Pool;
  prisma: PrismaClient;
  jobs: JobLayer;
  registry: Registry;
  /** The engine's clock (ms since epoch); tests move it. */
  clock: () => number;
  /** The outbox's consumers besides the engine. */
  consumers: OutboxConsumers;
  heavyIngestion?: SegmentEngineOptions["heavyIngestion"];
  log: (msg: string, err?: unknown) => void;
}

export function createSegments({ pool, prisma, jobs, registry, clock, consumers, heavyIngestion, log }: SegmentsDeps) {
  const lag = new client.Histogram({
    name: "tidings_segment_engine_lag_seconds",
    help: "How long each change (an ingestion commit, an assignment…) waited for the segment engine: its commit to its segments being current",
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [registry],
  });
  const engine = new SegmentEngine({
    pool,
    jobs,
    clock,
    consumers,
    lag: (s) => lag.observe(s),
    ...(heavyIngestion ? { heavyIngestion } : {}),
    log,
  });
  engine.register();
  return { engine, module: { adminRoutes: segmentRoutes({ prisma }) } satisfies Module };
}
