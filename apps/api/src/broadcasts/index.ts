// Broadcasts: one message to a segment's members, executed once per name; the runner freezes the
// audience as delivery rows and the delivery pipeline sends them.
import type pg from "pg";
import type { PrismaClient } from "../db/client.ts";
import type { JobLayer } from "../jobs/index.ts";
import type { Registry } from "../http/metrics.ts";
import type { Module } from "../http/module.ts";
import type { SendJobs } from "../messaging/index.ts";
import type { SegmentEngine } from "../segments/index.ts";
import { registerBroadcastGauge } from "./metrics.ts";
import { broadcastRoutes } from "./routes.ts";
import { BroadcastRunner } from "./runner.ts";

export interface BroadcastsDeps {
  pool: pg.Pool;
  prisma: PrismaClient;
  jobs: JobLayer;
  registry: Registry;
  segments: SegmentEngine;
  sends: SendJobs;
}

export function createBroadcasts({ pool, prisma, jobs, registry, segments, sends }: BroadcastsDeps) {
  registerBroadcastGauge(registry, pool);
  new BroadcastRunner({ pool, prisma, jobs, segments, sends }).register();
  return { module: { adminRoutes: broadcastRoutes({ prisma }) } satisfies Module };
}
