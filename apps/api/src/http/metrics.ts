// Prometheus metrics (prom-client): one registry per app instance, with the process's default
// metrics, the event loop's delay, every request's count and latency, and the /metrics route.
// Each capability declares its own metrics on the registry it is built with.
import { monitorEventLoopDelay } from "node:perf_hooks";
import { contractsById as op } from "@tidings/schema";
import type { FastifyInstance } from "fastify";
import client from "prom-client";
import { route } from "./route.ts";

export type Registry = client.Registry;

/** The request counter and latency histogram of `registry` (made once: several apps may share a registry). */
function requestMetrics(registry: Registry) {
  const existing = registry.getSingleMetric("tidings_http_requests_total");
  if (existing) {
    return {
      requests: existing as client.Counter<"route" | "method" | "status">,
      latency: registry.getSingleMetric("tidings_http_request_duration_seconds") as client.Histogram<"route" | "method">,
    };
  }
  return {
    requests: new client.Counter({
      name: "tidings_http_requests_total",
      help: "HTTP requests by route, method and status",
      labelNames: ["route", "method", "status"] as const,
      registers: [registry],
    }),
    latency: new client.Histogram({
      name: "tidings_http_request_duration_seconds",
      help: "HTTP request latency by route",
      labelNames: ["route", "method"] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
  };
}

/** A registry with the default process metrics and the event loop's delay. */
export function createRegistry(): Registry {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  registerEventLoopDelay(registry);
  return registry;
}

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

/** Counts every request and its latency (by route, method and status), and serves /metrics. */
export function registerMetrics(app: FastifyInstance, registry: Registry) {
  const { requests, latency } = requestMetrics(registry);
  // Labelled children per route, method and status, so a request costs no label hashing.
  const children = new Map<string, { requests: ReturnType<typeof requests.labels>; latency: ReturnType<typeof latency.labels> }>();
  app.addHook("onResponse", (request, reply, done) => {
    const route = request.routeOptions.url ?? "unmatched";
    const key = `${route} ${request.method} ${reply.statusCode}`;
    let child = children.get(key);
    if (!child) {
      child = {
        requests: requests.labels(route, request.method, String(reply.statusCode)),
        latency: latency.labels(route, request.method),
      };
      children.set(key, child);
    }
    child.requests.inc();
    child.latency.observe(reply.elapsedTime / 1000);
    done();
  });
  route(app, op["metrics.get"], async ({ reply }) => {
    reply.type(registry.contentType);
    return registry.metrics();
  });
}
