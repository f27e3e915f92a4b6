// The OpenAPI registry and what every operation's description is built from: the security
// schemes of each auth kind, the error responses of each code, JSON bodies.
import { OpenAPIRegistry, type RouteConfig } from "@asteasolutions/zod-to-openapi";
import type { z } from "zod";
import type { AuthKind } from "../contracts/contract.js";
import { type ErrorCode, ErrorResponse, errorDescriptions, errorStatus } from "../errors.js";

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
  description: "The root key (TIDINGS_ROOT_KEY): creates and lists workspaces and mints admin API keys for them.",
});

/** The security requirement of each auth kind (`none`: the operation lists none). */
export const securityOf: Record<AuthKind, RouteConfig["security"]> = {
  admin: [{ [adminKey.name]: [] }],
  root: [{ [rootKey.name]: [] }],
  write: [{ [writeKeyBasic.name]: [] }, { [writeKeyHeader.name]: [] }],
  none: undefined,
};

// Named, so every error response is a $ref to the one ErrorResponse component, not a copy of it.
const ErrorEnvelope = ErrorResponse.openapi("ErrorResponse");

/** One response per status of `codes`, each naming its code and meaning, in the error envelope. */
export function errorResponses(codes: readonly ErrorCode[]): RouteConfig["responses"] {
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

export const content = <T extends z.ZodType>(schema: T, type = "application/json") => ({ content: { [type]: { schema } } });
