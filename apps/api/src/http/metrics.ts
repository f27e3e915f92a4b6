// Prometheus metrics (prom-client), one registry per app instance.
import { monitorEventLoopDelay } from "node:perf_hooks";
import { contractsById as op } from "@tidings/schema";
import type { FastifyInstance } from "fastify";
import client from "prom-client";
import type { JobLayer } from "../jobs/index.ts";
import { route } from "./route.ts";

export function createMetrics(
  jobs: Pick<JobLayer, "queueStats">,
  broadcastsRunning: () => Promise<number> = async () => 0,
  outboxOldestAge: () => Promise<number> = async () => 0,
  failingDefinitions: () => Promise<{ segment: number; journey: number }> = async () => ({ segment: 0, journey: 0 }),
) {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  registerEventLoopDelay(registry);
  registerJobGauges(registry, jobs);
  const requests = new client.Counter({
    name: "tidings_http_requests_total",
    help: "HTTP requests by route, method and status",
    labelNames: ["route", "method", "status"] as const,
    registers: [registry],
  });
  const latency = new client.Histogram({
    name: "tidings_http_request_duration_seconds",
    help: "HTTP request latency by route",
    labelNames: ["route", "method"] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  const eventsReceived = new client.Counter({
    name: "tidings_events_received_total",
    help: "Events accepted and committed (replays included)",
    registers: [registry],
  });
  const eventsStored = new client.Counter({
    name: "tidings_events_ingested_total",
    help: "New events stored (replayed messageIds excluded)",
    registers: [registry],
  });
  const commitSeconds = new client.Histogram({
    name: "tidings_ingest_commit_duration_seconds",
    help: "Duration of ingestion group commits",
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    registers: [registry],
  });
  const deliveries = new client.Counter({
    name: "tidings_deliveries_total",
    help: "Delivery outcomes by channel and status (Sent, Failed, Skipped, Retry: a transient failure to be retried)",
    labelNames: ["channel", "status"] as const,
    registers: [registry],
  });
  const providerSeconds = new client.Histogram({
    name: "tidings_provider_request_duration_seconds",
    help: "Time a provider took to answer one send call (a batch for Expo) by provider type",
    labelNames: ["provider"] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const journeyTimerLateness = new client.Histogram({
    name: "tidings_journey_timer_lateness_seconds",
    help: "How late a journey run's delay or wait timeout fired (due time to the run moving on)",
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  const retentionPruned = new client.Counter({
    name: "tidings_retention_pruned_total",
    help: "Rows removed by retention: events, membership_changes (segment history), delivery_bodies (rendered messages cleared)",
    labelNames: ["kind"] as const,
    registers: [registry],
  });
  const segmentLag = new client.Histogram({
    name: "tidings_segment_engine_lag_seconds",
    help: "How long each change (an ingestion commit, an assignment…) waited for the segment engine: its commit to its segments being current",
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [registry],
  });
  new client.Gauge({
    name: "tidings_segment_outbox_oldest_age_seconds",
    help: "Seconds since the oldest change still waiting for the segment engine was committed; 0 when none",
    registers: [registry],
    async collect() {
      this.set(await outboxOldestAge().catch(() => Number.NaN));
    },
  });
  new client.Gauge({
    name: "tidings_broadcasts_in_progress",
    help: "Broadcasts queued or running",
    registers: [registry],
    async collect() {
      this.set(await broadcastsRunning().catch(() => Number.NaN));
    },
  });
  new client.Gauge({
    name: "tidings_definitions_failing",
    help: "Segments and journeys set aside because their evaluation fails (GET shows `failing` with the reason); retried with back-off",
    labelNames: ["kind"] as const,
    registers: [registry],
    async collect() {
      const counts = await failingDefinitions().catch(() => ({ segment: Number.NaN, journey: Number.NaN }));
      this.set({ kind: "segment" }, counts.segment);
      this.set({ kind: "journey" }, counts.journey);
    },
  });
  return {
    registry,
    requests,
    latency,
    eventsReceived,
    eventsStored,
    commitSeconds,
    deliveries,
    providerSeconds,
    journeyTimerLateness,
    segmentLag,
    retentionPruned,
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

type DelayHistogram = ReturnType<typeof monitorEventLoopDelay>;

/** prom-client's event-loop delay statistics: name infix, help, value in nanoseconds. */
const eventLoopStats: [string, string, (h: DelayHistogram) => number][] = [
  ["min", "The minimum recorded event loop delay.", (h) => h.min],
  ["max", "The maximum recorded event loop delay.", (h) => h.max],
  ["mean", "The mean of the recorded event loop delays.", (h) => h.mean],
  ["stddev", "The standard deviation of the recorded event loop delays.", (h) => h.stddev],
  ["p50", "The 50th percentile of the recorded event loop delays.", (h) => h.percentile(50)],
  ["p90", "The 90th percentile of the recorded event loop delays.", (h) => h.percentile(90)],
  ["p99", "The 99th percentile of the recorded event loop delays.", (h) => h.percentile(99)],
];

/**
 * The event-loop delay gauges, under prom-client's names. prom-client's own read a delay histogram
 * that each scrape resets, and the histogram takes a sample every 10 ms: a scrape that follows
 * another sooner finds it empty, and an empty histogram answers NaN (mean, stddev), 2^63 ns (min)
 * and made-up percentiles. These keep the last values until new samples arrive.
 */
function registerEventLoopDelay(registry: client.Registry) {
  const lagName = "nodejs_eventloop_lag_seconds";
  const statName = (stat: string) => `nodejs_eventloop_lag_${stat}_seconds`;
  for (const name of [lagName, ...eventLoopStats.map(([stat]) => statName(stat))]) registry.removeSingleMetric(name);
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  // Registered first, as in prom-client: the registry reads metrics in order, so this collect
  // updates the other gauges before they are read.
  new client.Gauge({
    name: lagName,
    help: "Lag of event loop in seconds.",
    registers: [registry],
    collect() {
      const start = process.hrtime.bigint();
      setImmediate(() => this.set(Number(process.hrtime.bigint() - start) / 1e9));
      if (histogram.count === 0) return;
      for (const { gauge, read } of stats) gauge.set(read(histogram) / 1e9);
      histogram.reset();
    },
  });
  const stats = eventLoopStats.map(([stat, help, read]) => ({
    gauge: new client.Gauge({ name: statName(stat), help, registers: [registry] }),
    read,
  }));
}

/**
 * The job queue, read from PostgreSQL on each scrape: one query serves both gauges (the registry
 * collects them concurrently). Without the database they read NaN rather than failing the scrape.
 */
function registerJobGauges(registry: client.Registry, jobs: Pick<JobLayer, "queueStats">) {
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

export function registerMetrics(app: FastifyInstance, metrics: Metrics) {
  // Labelled children per route, method and status, so a request costs no label hashing.
  const children = new Map<
    string,
    { requests: ReturnType<Metrics["requests"]["labels"]>; latency: ReturnType<Metrics["latency"]["labels"]> }
  >();
  app.addHook("onResponse", (request, reply, done) => {
    const route = request.routeOptions.url ?? "unmatched";
    const key = `${route} ${request.method} ${reply.statusCode}`;
    let child = children.get(key);
    if (!child) {
      child = {
        requests: metrics.requests.labels(route, request.method, String(reply.statusCode)),
        latency: metrics.latency.labels(route, request.method),
      };
      children.set(key, child);
    }
    child.requests.inc();
    child.latency.observe(reply.elapsedTime / 1000);
    done();
  });
  route(app, op["metrics.get"], async ({ reply }) => {
    reply.type(metrics.registry.contentType);
    return metrics.registry.metrics();
  });
}
