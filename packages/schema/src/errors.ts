// The one error envelope every Tidings endpoint answers with, and its closed list of codes.
import { z } from "./zod.js";

export const ErrorCode = z
  .enum([
    "VALIDATION_FAILED",
    "UNAUTHORIZED",
    "FORBIDDEN",
    "NOT_FOUND",
    "CONFLICT",
    "PAYLOAD_TOO_LARGE",
    "UNSUPPORTED_MEDIA_TYPE",
    "RATE_LIMITED",
    "UNAVAILABLE",
    "INTERNAL",
  ])
  .describe("Machine-readable error code; the list is closed.");
export type ErrorCode = z.infer<typeof ErrorCode>;

/** HTTP status each error code is answered with. */
export const errorStatus: Record<ErrorCode, number> = {
  VALIDATION_FAILED: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  UNAVAILABLE: 503,
  INTERNAL: 500,
};

/** What each code means, used in the OpenAPI description. */
export const errorDescriptions: Record<ErrorCode, string> = {
  VALIDATION_FAILED: "The request is malformed or violates the schema; `issues` names each offending field.",
  UNAUTHORIZED: "The credential is missing, unknown, revoked or of the wrong kind.",
  FORBIDDEN: "The credential is valid but may not act on the named workspace.",
  NOT_FOUND: "The resource does not exist in this workspace.",
  CONFLICT: "The request conflicts with the current state (for example, the resource is in use).",
  PAYLOAD_TOO_LARGE: "The request, an event or a batch exceeds a size limit.",
  UNSUPPORTED_MEDIA_TYPE: "The body is not JSON (gzip-encoded bodies are accepted with any content type).",
  RATE_LIMITED: "The workspace exceeded its rate limit; retry after `Retry-After` seconds.",
  UNAVAILABLE:
    "The server is overloaded, shutting down or not ready, or its database cannot be reached or cannot take the work for now (read-only, out of disk or memory); retry after `Retry-After` seconds.",
  INTERNAL: "An unexpected error. Details are logged under the request id, never returned.",
};

export const ErrorIssue = z.object({
  path: z.string().describe("Dot path of the offending field, e.g. `batch.3.event`."),
  message: z.string(),
});
export type ErrorIssue = z.infer<typeof ErrorIssue>;

export const ErrorResponse = z
  .object({
    error: z.object({
      code: ErrorCode,
      message: z.string().describe("Human-readable explanation."),
      requestId: z.string().describe("Id of the request, also in the `x-request-id` header and the server logs."),
      issues: z.array(ErrorIssue).optional(),
    }),
  })
  .describe("Error envelope returned with every 4xx and 5xx status.");
export type ErrorResponse = z.infer<typeof ErrorResponse>;
