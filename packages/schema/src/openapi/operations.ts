// Health and metrics.
import { z } from "zod";
import { errors, json, registry } from "./registry.js";

export function registerOperationsPaths() {
  for (const [path, summary] of [
    ["/health/live", "The process is up"],
    ["/health/ready", "The database answers"],
  ] as const) {
    registry.registerPath({
      method: "get",
      path,
      tags: ["Operations"],
      summary,
      responses: { 200: { description: "OK.", ...json(z.object({ status: z.literal("ok") })) }, ...errors("UNAVAILABLE") },
    });
  }
  registry.registerPath({
    method: "get",
    path: "/metrics",
    tags: ["Operations"],
    summary: "Prometheus metrics",
    responses: { 200: { description: "Prometheus text format.", content: { "text/plain": { schema: z.string() } } } },
  });
}
