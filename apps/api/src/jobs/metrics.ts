// The job queue's gauges on /metrics, read from PostgreSQL at each scrape.
import client from "prom-client";
import type { JobLayer } from "./layer.ts";

/**
 * The job queue, read from PostgreSQL on each scrape: one query serves both gauges (the registry
 * collects them concurrently). Without the database they read NaN rather than failing the scrape.
 */
export function registerJobGauges(registry: client.Registry, jobs: Pick<JobLayer, "queueStats">) {
  let reading: Promise<{ depth: number; oldestAgeSeconds: number } | null> | null = null;
  const read = () =>
    (reading ??= jobs
      .queueStats()
      .catch(() => null)
      .finally(() => {
        reading = null;
      }));
  new client.Gauge({
    name: "tidings_jobs_queue_depth",
    help: "Background jobs due to run and not yet taken by a worker",
    registers: [registry],
    async collect() {
      this.set((await read())?.depth ?? Number.NaN);
    },
  });
  new client.Gauge({
    name: "tidings_jobs_oldest_age_seconds",
    help: "Seconds since the oldest job due to run (and not taken) became due; 0 when none",
    registers: [registry],
    async collect() {
      this.set((await read())?.oldestAgeSeconds ?? Number.NaN);
    },
  });
}
