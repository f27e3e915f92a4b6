// Ingestion's metrics.
import client from "prom-client";

export function ingestMetrics(registry: client.Registry) {
  return {
    eventsReceived: new client.Counter({
      name: "tidings_events_received_total",
      help: "Events accepted and committed (replays included)",
      registers: [registry],
    }),
    eventsStored: new client.Counter({
      name: "tidings_events_ingested_total",
      help: "New events stored (replayed messageIds excluded)",
      registers: [registry],
    }),
    commitSeconds: new client.Histogram({
      name: "tidings_ingest_commit_duration_seconds",
      help: "Duration of ingestion group commits",
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
      registers: [registry],
    }),
  };
}
export type IngestMetrics = ReturnType<typeof ingestMetrics>;
