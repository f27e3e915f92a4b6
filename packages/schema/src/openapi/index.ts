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
        "Timestamps in admin resources are milliseconds since the epoch. Every error answers with the envelope `ErrorResponse`; codes:",
        ...Object.entries(errorDescriptions).map(
          ([code, text]) => `- \`${code}\` (${errorStatus[code as ErrorCode]}): ${text}`,
        ),
      ].join("\n"),
    },
    servers: options.serverUrl ? [{ url: options.serverUrl }] : [],
  }) as unknown as Record<string, unknown> & { paths?: Record<string, unknown> };
}
