// Prometheus metrics (prom-client), one registry per app instance.
import type { FastifyInstance } from "fastify";
import client from "prom-client";

export function createMetrics() {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
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
  return { registry, requests, latency, eventsReceived, eventsStored, commitSeconds };
}

export type Metrics = ReturnType<typeof createMetrics>;

export function registerMetrics(app: FastifyInstance, metrics: Metrics) {
  // Labelled children per route, method and status, so a request costs no label hashing.
  const children = new Map<string, { requests: ReturnType<Metrics["requests"]["labels"]>; latency: ReturnType<Metrics["latency"]["labels"]> }>();
  app.addHook("onResponse", (request, reply, done) => {
    const route = request.routeOptions.url ?? "unmatched";
    const key = `${route} ${request.method} ${reply.statusCode}`;
    let child = children.get(key);
    if (!child) {
      child = { requests: metrics.requests.labels(route, request.method, String(reply.statusCode)), latency: metrics.latency.labels(route, request.method) };
      children.set(key, child);
    }
    child.requests.inc();
    child.latency.observe(reply.elapsedTime / 1000);
    done();
  });
  app.get("/metrics", async (_request, reply) => {
    reply.type(metrics.registry.contentType);
    return metrics.registry.metrics();
  });
}
