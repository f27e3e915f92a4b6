// The OpenAPI registry and the helpers every route description uses (security schemes, the
// error responses of each code, JSON bodies).
import { OpenAPIRegistry, type RouteConfig } from "@asteasolutions/zod-to-openapi";
import type { z } from "zod";
import { type ErrorCode, ErrorResponse, errorDescriptions, errorStatus } from "../errors.js";

export const registry = new OpenAPIRegistry();

export const writeKeyBasic = registry.registerComponent("securitySchemes", "writeKeyBasic", {
  type: "http",
  scheme: "basic",
  description:
    "Write key as `Basic <key>`, `Basic base64(<key>:)` (Segment libraries) or `Basic base64(<key>)`. `Bearer <key>`, a `PublicWriteKey` header or a `writeKey` body field are accepted too.",
});
export const writeKeyHeader = registry.registerComponent("securitySchemes", "publicWriteKey", {
  type: "apiKey",
  in: "header",
  name: "PublicWriteKey",
});
export const adminKey = registry.registerComponent("securitySchemes", "adminApiKey", {
  type: "http",
  scheme: "bearer",
  description: "Admin API key, bound to one workspace.",
});
export const rootKey = registry.registerComponent("securitySchemes", "rootKey", {
  type: "http",
  scheme: "bearer",
  description: "The root key (TIDINGS_ROOT_KEY): creates and lists workspaces and mints admin API keys for them.",
});

// Named, so every error response is a $ref to the one ErrorResponse component, not a copy of it.
const ErrorEnvelope = ErrorResponse.openapi("ErrorResponse");

export function errors(...codes: ErrorCode[]): RouteConfig["responses"] {
  const out: RouteConfig["responses"] = {};
  for (const code of codes) {
    const status = errorStatus[code];
    const prev = out[status] as { description: string } | undefined;
    out[status] = {
      description: prev ? `${prev.description} ${code}: ${errorDescriptions[code]}` : `${code}: ${errorDescriptions[code]}`,
      content: { "application/json": { schema: ErrorEnvelope } },
    };
  }
  return out;
}

export const json = <T extends z.ZodType>(schema: T) => ({ content: { "application/json": { schema } } });

export const ingestErrors: RouteConfig["responses"] = errors(
  "VALIDATION_FAILED",
  "UNAUTHORIZED",
  "PAYLOAD_TOO_LARGE",
  "UNSUPPORTED_MEDIA_TYPE",
  "RATE_LIMITED",
  "UNAVAILABLE",
  "INTERNAL",
);
export const adminErrors = (...extra: ErrorCode[]): RouteConfig["responses"] =>
  errors("VALIDATION_FAILED", "UNAUTHORIZED", "FORBIDDEN", ...extra, "INTERNAL");

export const ingestSecurity = [{ [writeKeyBasic.name]: [] }, { [writeKeyHeader.name]: [] }];


/** Security requirement for admin routes. */
export const adminSecurity = [{ [adminKey.name]: [] }];
