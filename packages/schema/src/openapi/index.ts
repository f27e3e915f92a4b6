// @tidings/schema/openapi: the OpenAPI 3.1 document, generated from the route contracts — the
// same contracts the server registers its routes from. `buildOpenApiDocument()` is what
// GET /openapi.json serves and `tidings openapi` prints.
import { OpenApiGeneratorV31, type RouteConfig } from "@asteasolutions/zod-to-openapi";
import packageJson from "../../package.json" with { type: "json" };
import { type Contract, contracts } from "../contracts/index.js";
import { type ErrorCode, errorDescriptions, errorStatus } from "../errors.js";
import { content, errorResponses, registry, securityOf } from "./registry.js";

export { registry } from "./registry.js";

/** The OpenAPI operation of a contract. */
function routeConfig(c: Contract): RouteConfig {
  const security = securityOf[c.auth];
  const request: NonNullable<RouteConfig["request"]> = {};
  if (c.params) request.params = c.params;
  if (c.query) request.query = c.query;
  if (c.body) request.body = { ...content(c.body), ...(c.body.isOptional() ? { required: false } : {}) };
  const { status, description, schema, contentType } = c.success;
  return {
    method: c.method.toLowerCase() as RouteConfig["method"],
    path: c.path,
    operationId: c.operationId,
    tags: [...c.tags],
    summary: c.summary,
    ...(c.description !== undefined ? { description: c.description } : {}),
    ...(security ? { security } : {}),
    ...(Object.keys(request).length > 0 ? { request } : {}),
    responses: {
      [status]: { description, ...(schema ? content(schema, contentType) : {}) },
      ...errorResponses(c.errors),
    },
  };
}

let registered = false;
function registerAll() {
  if (registered) return;
  registered = true;
  for (const c of contracts as readonly Contract[]) if (!c.hidden) registry.registerPath(routeConfig(c));
}

export interface OpenApiOptions {
  serverUrl?: string;
  /** Defaults to the version of @tidings/schema. */
  version?: string;
}

/** Builds the OpenAPI 3.1 document: every operation of the contracts but the hidden ones. */
export function buildOpenApiDocument(options: OpenApiOptions = {}): Record<string, unknown> & { paths?: Record<string, unknown> } {
  registerAll();
  const generator = new OpenApiGeneratorV31(registry.definitions);
  return generator.generateDocument({
    openapi: "3.1.0",
    info: {
      title: "Tidings API",
      version: options.version ?? packageJson.version,
      description: [
        "Customer-engagement backend: Segment-compatible event ingestion and an admin API.",
        "",
        "Admin request bodies refuse unknown fields, at any depth (400 `VALIDATION_FAILED`, one issue per field, its `path` ending in the field's name); the exceptions are a journey's `draft` (editor state is kept as sent) and a render request's inline `user` and `event`. Ingestion bodies keep unknown fields (Segment spec). Server-managed fields (`createdAt`, `updatedAt`, `definitionUpdatedAt`, `lastRecomputed`) are accepted in upsert bodies and ignored. `workspaceId` is optional in every admin request: absent, it is the key's workspace. A `DELETE` or bodiless `POST` may carry `Content-Type: application/json` with an empty body.",
        "",
        "Timestamps in admin resources are milliseconds since the epoch. Every error answers with the envelope `ErrorResponse`; codes:",
        ...Object.entries(errorDescriptions).map(([code, text]) => `- \`${code}\` (${errorStatus[code as ErrorCode]}): ${text}`),
      ].join("\n"),
    },
    servers: options.serverUrl ? [{ url: options.serverUrl }] : [],
  }) as unknown as Record<string, unknown> & { paths?: Record<string, unknown> };
}
