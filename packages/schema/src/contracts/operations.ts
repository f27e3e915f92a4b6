// Health probes, Prometheus metrics and the OpenAPI document itself.
import { z } from "../zod.js";
import { HealthResponse, OpenApiDocumentResponse } from "../operations.js";
import { defineContract } from "./contract.js";

const tags = ["Operations"] as const;

export const operationContracts = [
  defineContract({
    operationId: "health.live",
    method: "GET",
    path: "/health/live",
    auth: "none",
    tags,
    summary: "The process is up",
    success: { status: 200, description: "OK.", schema: HealthResponse },
    errors: ["UNAVAILABLE"],
  }),
  defineContract({
    operationId: "health.ready",
    method: "GET",
    path: "/health/ready",
    auth: "none",
    tags,
    summary: "The database answers",
    success: { status: 200, description: "OK.", schema: HealthResponse },
    errors: ["UNAVAILABLE"],
  }),
  defineContract({
    operationId: "metrics.get",
    method: "GET",
    path: "/metrics",
    auth: "none",
    tags,
    summary: "Prometheus metrics",
    success: { status: 200, description: "Prometheus text format.", schema: z.string(), contentType: "text/plain" },
    errors: [],
  }),
  defineContract({
    operationId: "openapi.get",
    method: "GET",
    path: "/openapi.json",
    auth: "none",
    tags,
    summary: "The OpenAPI 3.1 document of this API",
    success: { status: 200, description: "The document.", schema: OpenApiDocumentResponse },
    errors: [],
    hidden: true,
  }),
] as const;
