// The OpenAPI registry: every route of the server, described from the same zod schemas the
// server validates with. `buildOpenApiDocument()` is what GET /openapi.json serves.
import { OpenAPIRegistry, OpenApiGeneratorV31, type RouteConfig } from "@asteasolutions/zod-to-openapi";
import { z } from "./zod.js";
import { type ErrorCode, ErrorResponse, errorDescriptions, errorStatus } from "./errors.js";
import { BatchRequestBody, singleEventBodies } from "./events.js";
import {
  ApiKeyListResponse,
  CreateApiKeyRequestBody,
  CreatedApiKeyResponse,
  CreateWorkspaceRequestBody,
  CreateWorkspaceResponse,
} from "./workspaces.js";
import { EventListQuery, EventListResponse, UserParams, UserQuery, UserResource } from "./users.js";

export const registry = new OpenAPIRegistry();

const writeKeyBasic = registry.registerComponent("securitySchemes", "writeKeyBasic", {
  type: "http",
  scheme: "basic",
  description:
    "Write key as `Basic <key>`, `Basic base64(<key>:)` (Segment libraries) or `Basic base64(<key>)`. `Bearer <key>`, a `PublicWriteKey` header or a `writeKey` body field are accepted too.",
});
const writeKeyHeader = registry.registerComponent("securitySchemes", "publicWriteKey", {
  type: "apiKey",
  in: "header",
  name: "PublicWriteKey",
});
const adminKey = registry.registerComponent("securitySchemes", "adminApiKey", {
  type: "http",
  scheme: "bearer",
  description: "Admin API key, bound to one workspace.",
});
const rootKey = registry.registerComponent("securitySchemes", "rootKey", {
  type: "http",
  scheme: "bearer",
  description: "The root key (TIDINGS_ROOT_KEY); only creates workspaces.",
});

registry.register("ErrorResponse", ErrorResponse);

function errors(...codes: ErrorCode[]): RouteConfig["responses"] {
  const out: RouteConfig["responses"] = {};
  for (const code of codes) {
    const status = errorStatus[code];
    const prev = out[status] as { description: string } | undefined;
    out[status] = {
      description: prev ? `${prev.description} ${code}: ${errorDescriptions[code]}` : `${code}: ${errorDescriptions[code]}`,
      content: { "application/json": { schema: ErrorResponse } },
    };
  }
  return out;
}

const json = <T extends z.ZodType>(schema: T) => ({ content: { "application/json": { schema } } });

const ingestErrors = errors(
  "VALIDATION_FAILED",
  "UNAUTHORIZED",
  "PAYLOAD_TOO_LARGE",
  "UNSUPPORTED_MEDIA_TYPE",
  "RATE_LIMITED",
  "UNAVAILABLE",
  "INTERNAL",
);
const adminErrors = (...extra: ErrorCode[]) =>
  errors("VALIDATION_FAILED", "UNAUTHORIZED", "FORBIDDEN", ...extra, "INTERNAL");

const ingestSecurity = [{ [writeKeyBasic.name]: [] }, { [writeKeyHeader.name]: [] }];

for (const prefix of ["/api/public/apps", "/v1"]) {
  for (const [kind, body] of Object.entries(singleEventBodies)) {
    registry.registerPath({
      method: "post",
      path: `${prefix}/${kind}`,
      tags: ["Ingestion"],
      summary: `Submit a ${kind} event`,
      description:
        "Answers 204 once the event is committed. A replayed messageId is acknowledged and stored once. Bodies may be gzip-encoded (`Content-Encoding: gzip`) whatever their content type. Limits: 32 KB per event, 500 KB per request.",
      security: ingestSecurity,
      request: { body: json(body) },
      responses: { 204: { description: "Committed." }, ...ingestErrors },
    });
  }
  registry.registerPath({
    method: "post",
    path: `${prefix}/batch`,
    tags: ["Ingestion"],
    summary: "Submit several events",
    description:
      "Answers 204 once every event is committed; if any item is invalid nothing is stored and `issues` names each bad item (e.g. `batch.3.event`). Limits: 2 500 events, 32 KB per event, 500 KB per request.",
    security: ingestSecurity,
    request: { body: json(BatchRequestBody) },
    responses: { 204: { description: "Committed." }, ...ingestErrors },
  });
}

registry.registerPath({
  method: "post",
  path: "/api/admin/workspaces",
  tags: ["Workspaces"],
  summary: "Create a workspace with a write key and an admin API key",
  security: [{ [rootKey.name]: [] }],
  request: { body: json(CreateWorkspaceRequestBody) },
  responses: {
    201: { description: "Created. The keys are shown only here.", ...json(CreateWorkspaceResponse) },
    ...errors("VALIDATION_FAILED", "UNAUTHORIZED", "CONFLICT", "INTERNAL"),
  },
});

for (const [path, kind] of [
  ["/api/admin/api-keys", "admin API key"],
  ["/api/admin/write-keys", "write key"],
] as const) {
  registry.registerPath({
    method: "post",
    path,
    tags: ["Keys"],
    summary: `Create a ${kind}`,
    security: [{ [adminKey.name]: [] }],
    request: { body: json(CreateApiKeyRequestBody) },
    responses: { 201: { description: "Created; `key` is shown only here.", ...json(CreatedApiKeyResponse) }, ...adminErrors() },
  });
  registry.registerPath({
    method: "get",
    path,
    tags: ["Keys"],
    summary: `List ${kind}s (without the keys themselves)`,
    security: [{ [adminKey.name]: [] }],
    request: { query: z.object({ workspaceId: z.uuid().optional() }) },
    responses: { 200: { description: "The keys.", ...json(ApiKeyListResponse) }, ...adminErrors() },
  });
  registry.registerPath({
    method: "delete",
    path: `${path}/{id}`,
    tags: ["Keys"],
    summary: `Revoke a ${kind}`,
    security: [{ [adminKey.name]: [] }],
    request: { params: z.object({ id: z.uuid() }) },
    responses: { 204: { description: "Revoked." }, ...adminErrors("NOT_FOUND") },
  });
}

registry.registerPath({
  method: "get",
  path: "/api/admin/users/{userId}",
  tags: ["Users"],
  summary: "Get a user's profile, identities, groups and recent events",
  security: [{ [adminKey.name]: [] }],
  request: { params: UserParams, query: UserQuery },
  responses: { 200: { description: "The user.", ...json(UserResource) }, ...adminErrors("NOT_FOUND") },
});

registry.registerPath({
  method: "get",
  path: "/api/admin/events",
  tags: ["Users"],
  summary: "List events, newest first",
  security: [{ [adminKey.name]: [] }],
  request: { query: EventListQuery },
  responses: { 200: { description: "A page of events.", ...json(EventListResponse) }, ...adminErrors() },
});

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

export interface OpenApiOptions {
  serverUrl?: string;
  version?: string;
}

/** Builds the OpenAPI 3.1 document for every registered route. */
export function buildOpenApiDocument(options: OpenApiOptions = {}): Record<string, unknown> & { paths?: Record<string, unknown> } {
  const generator = new OpenApiGeneratorV31(registry.definitions);
  return generator.generateDocument({
    openapi: "3.1.0",
    info: {
      title: "Tidings API",
      version: options.version ?? "0.1.0",
      description: [
        "Customer-engagement backend: Segment-compatible event ingestion and an admin API.",
        "",
        "Timestamps in admin resources are milliseconds since the epoch. Every error answers with the envelope `ErrorResponse`; codes:",
        ...Object.entries(errorDescriptions).map(
          ([code, text]) => `- \`${code}\` (${errorStatus[code as ErrorCode]}): ${text}`,
        ),
      ].join("\n"),
    },
    servers: options.serverUrl ? [{ url: options.serverUrl }] : [],
  });
}
