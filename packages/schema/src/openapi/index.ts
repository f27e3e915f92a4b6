// The OpenAPI document: every route of the server, described from the same zod schemas the
// server validates with. `buildOpenApiDocument()` is what GET /openapi.json serves.
// Each area registers its paths in its own module; add a new module's call to registerAll.
import { OpenApiGeneratorV31 } from "@asteasolutions/zod-to-openapi";
import { type ErrorCode, errorDescriptions, errorStatus } from "../errors.js";
import { registerIngestPaths } from "./ingest.js";
import { registerJourneysPaths } from "./journeys.js";
import { registerKeysPaths } from "./keys.js";
import { registerOperationsPaths } from "./operations.js";
import { registerProvidersPaths } from "./providers.js";
import { registry } from "./registry.js";
import { registerSegmentsPaths } from "./segments.js";
import { registerSubscriptionGroupsPaths } from "./subscription-groups.js";
import { registerTemplatesPaths } from "./templates.js";
import { registerUsersPaths } from "./users.js";

export { registry } from "./registry.js";

let registered = false;
function registerAll() {
  if (registered) return;
  registered = true;
  registerIngestPaths();
  registerKeysPaths();
  registerUsersPaths();
  registerSegmentsPaths();
  registerSubscriptionGroupsPaths();
  registerJourneysPaths();
  registerTemplatesPaths();
  registerProvidersPaths();
  registerOperationsPaths();
}

export interface OpenApiOptions {
  serverUrl?: string;
  version?: string;
}

/** Builds the OpenAPI 3.1 document for every registered route. */
export function buildOpenApiDocument(options: OpenApiOptions = {}): Record<string, unknown> & { paths?: Record<string, unknown> } {
  registerAll();
  const generator = new OpenApiGeneratorV31(registry.definitions);
  return generator.generateDocument({
    openapi: "3.1.0",
    info: {
      title: "Tidings API",
      version: options.version ?? "0.1.0",
      description: [
        "Customer-engagement backend: Segment-compatible event ingestion and an admin API.",
        "",
        "Admin request bodies refuse unknown fields, at any depth (400 `VALIDATION_FAILED`, one issue per field, its `path` ending in the field's name); the exceptions are a journey's `draft` (editor state is kept as sent) and a render request's inline `user` and `event`. Ingestion bodies keep unknown fields (Segment spec). Server-managed fields (`createdAt`, `updatedAt`, `definitionUpdatedAt`, `lastRecomputed`) are accepted in upsert bodies and ignored. `workspaceId` is optional in every admin request: absent, it is the key's workspace. A `DELETE` or bodiless `POST` may carry `Content-Type: application/json` with an empty body.",
        "",
        "Timestamps in admin resources are milliseconds since the epoch. Every error answers with the envelope `ErrorResponse`; codes:",
        ...Object.entries(errorDescriptions).map(
          ([code, text]) => `- \`${code}\` (${errorStatus[code as ErrorCode]}): ${text}`,
        ),
      ].join("\n"),
    },
    servers: options.serverUrl ? [{ url: options.serverUrl }] : [],
  }) as unknown as Record<string, unknown> & { paths?: Record<string, unknown> };
}
