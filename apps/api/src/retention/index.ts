// Retention: old events, segment history and rendered messages pruned in bounded slices on the
// job layer (TIDINGS_EVENT_RETENTION_DAYS, TIDINGS_DELIVERY_RETENTION_DAYS; off by default).
import type pg from "pg";
import client from "prom-client";
import type { JobLayer } from "../jobs/index.ts";
import type { Registry } from "../http/metrics.ts";
import type { Module } from "../http/module.ts";
import type { RetentionPolicy } from "./prune.ts";
import { Retention } from "./retention.ts";

export { PRUNE_KINDS, type PruneCursor, type PruneKind, pruneSlice, type RetentionPolicy } from "./prune.ts";
export type { Retention } from "./retention.ts";

export interface RetentionDeps {
  pool: pg.Pool;
  jobs: JobLayer;
  registry: Registry;
  policy: RetentionPolicy;
  clock: () => number;
  /** Rows per statement and slice length (tests make them small). */
  slices?: { batchSize: number; sliceMs: number };
}

export function createRetention({ pool, jobs, registry, policy, clock, slices }: RetentionDeps) {
  const pruned = new client.Counter({
    name: "tidings_retention_pruned_total",
    help: "Rows removed by retention: events, membership_changes (segment history), segment_sizes (size history), delivery_bodies (rendered messages cleared)",
    labelNames: ["kind"] as const,
    registers: [registry],
  });
  const retention = new Retention({ pool, jobs, policy, clock, onPruned: (kind, rows) => pruned.inc({ kind }, rows), ...slices });
  retention.register();
  return { retention, module: {} satisfies Module };
}
