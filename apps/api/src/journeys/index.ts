// Journeys: multi-step flows (the editor's draft compiled into a definition, versions, a lifecycle),
// and the runtime that moves each user's run through them (docs/journeys.md).
import type pg from "pg";
import client from "prom-client";
import type { PrismaClient } from "../db/client.ts";
import type { JobLayer } from "../jobs/index.ts";
import type { Registry } from "../http/metrics.ts";
import type { Module } from "../http/module.ts";
import type { SendJobs } from "../messaging/index.ts";
import type { OutboxConsumers } from "../outbox/index.ts";
import type { SegmentEngine } from "../segments/index.ts";
import { journeyDeliverySource } from "./delivery-source.ts";
import { journeyRoutes } from "./routes.ts";
import { JourneyRuntime } from "./runtime/index.ts";

export { userRuns } from "./runs.ts";
export type { JourneyRuntime } from "./runtime/index.ts";
export { upsertJourney } from "./service.ts";

export interface JourneysDeps {
  pool: pg.Pool;
  prisma: PrismaClient;
  jobs: JobLayer;
  registry: Registry;
  sends: SendJobs;
  segments: SegmentEngine;
  /** The outbox's consumers: the runtime is one (event entries). */
  outbox: OutboxConsumers;
  /** The runtime's clock (ms since epoch); tests move it. */
  clock: () => number;
  log: (msg: string) => void;
}

export function createJourneys({ pool, prisma, jobs, registry, sends, segments, outbox, clock, log }: JourneysDeps) {
  const lateness = new client.Histogram({
    name: "tidings_journey_timer_lateness_seconds",
    help: "How late a journey run's delay or wait timeout fired (due time to the run moving on)",
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  sends.addSource(journeyDeliverySource(pool));
  const runtime = new JourneyRuntime({ pool, jobs, sends, segments, outbox, clock, log, lateness: (s) => lateness.observe(s) });
  runtime.register();
  return { runtime, module: { adminRoutes: journeyRoutes({ prisma }) } satisfies Module };
}
