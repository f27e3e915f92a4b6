// The delivery pipeline's metrics.
import client from "prom-client";

export function messagingMetrics(registry: client.Registry) {
  return {
    deliveries: new client.Counter({
      name: "tidings_deliveries_total",
      help: "Delivery outcomes by channel and status (Sent, Failed, Skipped, Retry: a transient failure to be retried)",
      labelNames: ["channel", "status"] as const,
      registers: [registry],
    }),
    providerSeconds: new client.Histogram({
      name: "tidings_provider_request_duration_seconds",
      help: "Time a provider took to answer one send call (a batch for Expo) by provider type",
      labelNames: ["provider"] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
  };
}
export type MessagingMetrics = ReturnType<typeof messagingMetrics>;
