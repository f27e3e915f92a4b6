// One error model: ApiError carries a code of the closed list; the Fastify error handler maps
// every error (ours, zod's, Fastify's own) to the envelope and never leaks internals on 5xx.
import { didYouMean, type ErrorCode, type ErrorIssue, type ErrorResponse, errorStatus, schemaKeys } from "@tidings/schema";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from "fastify-type-provider-zod";
import { ZodError } from "zod";
import { isDatabaseRefusing, isDatabaseUnavailable } from "../db/errors.ts";

export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly issues?: ErrorIssue[],
    /** Extra response headers, e.g. Retry-After. */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
  get status(): number {
    return errorStatus[this.code];
  }
}

export const badRequest = (message: string, issues?: ErrorIssue[]) => new ApiError("VALIDATION_FAILED", message, issues);
export const notFound = (what: string) => new ApiError("NOT_FOUND", `${what} not found`);
/** PostgreSQL cannot be reached (stopped, restarting, cut off): the request may be sent again. */
export const databaseUnavailable = () =>
  new ApiError("UNAVAILABLE", "The database is unreachable; retry later", undefined, { "retry-after": "2" });
/** PostgreSQL is up but refuses the work for now (read-only, out of disk or memory): the request may be sent again. */
export const databaseRefusing = () =>
  new ApiError("UNAVAILABLE", "The database cannot take this request right now; retry later", undefined, { "retry-after": "5" });

const joinPath = (path: readonly PropertyKey[]) => path.map(String).join(".") || "(body)";

/**
 * One issue per offending field. zod reports all unknown keys of an object in one
 * `unrecognized_keys` issue at the object's path; each key gets its own issue, the key appended
 * to the path, so the client sees which field to fix — and the closest field the schema knows
 * (`within_seconds` → did you mean "withinSeconds"?).
 */
function fieldIssues(path: readonly PropertyKey[], code: string, message: string, keys: unknown, known?: Set<string>): ErrorIssue[] {
  if (code === "unrecognized_keys" && Array.isArray(keys) && keys.length > 0) {
    return keys.map((key) => ({
      path: joinPath([...path, String(key)]),
      message: `unknown field ${JSON.stringify(String(key))}${known ? didYouMean(String(key), known) : ""}`,
    }));
  }
  return [{ path: joinPath(path), message }];
}

/** Turns zod issues into our issue list, prefixing paths (e.g. with `batch`). */
export function zodIssues(err: ZodError, prefix: (string | number)[] = [], schema?: unknown): ErrorIssue[] {
  const known = schema === undefined ? undefined : schemaKeys(schema);
  return err.issues.flatMap((i) => fieldIssues([...prefix, ...i.path], i.code, i.message, "keys" in i ? i.keys : undefined, known));
}

/** Fastify's own error codes that are the client's fault. */
const fastifyCodes: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_JSON_BODY: "VALIDATION_FAILED",
  FST_ERR_CTP_EMPTY_JSON_BODY: "VALIDATION_FAILED",
  FST_ERR_CTP_EMPTY_TYPE: "UNSUPPORTED_MEDIA_TYPE",
  FST_ERR_CTP_INVALID_MEDIA_TYPE: "UNSUPPORTED_MEDIA_TYPE",
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: "VALIDATION_FAILED",
  FST_ERR_CTP_BODY_TOO_LARGE: "PAYLOAD_TOO_LARGE",
  FST_ERR_CTP_INVALID_TYPE: "UNSUPPORTED_MEDIA_TYPE",
  FST_ERR_BAD_URL: "VALIDATION_FAILED",
  FST_ERR_ASYNC_CONSTRAINT: "VALIDATION_FAILED",
  FST_ERR_INVALID_URL: "VALIDATION_FAILED",
  FST_ERR_BAD_URL_PARAM: "VALIDATION_FAILED",
};

function toApiError(err: FastifyError | Error, request?: FastifyRequest): ApiError | null {
  if (err instanceof ApiError) return err;
  // Whatever was under way (a query, a transaction, a key lookup), never a 500.
  if (isDatabaseUnavailable(err)) return databaseUnavailable();
  if (isDatabaseRefusing(err)) return databaseRefusing();
  if (hasZodFastifySchemaValidationErrors(err)) {
    const where = (err as FastifyError & { validationContext?: string }).validationContext ?? "body";
    // The route's schema for this part of the request: its field names feed "did you mean".
    const schema = (request?.routeOptions.schema as Record<string, unknown> | undefined)?.[where];
    const known = schema === undefined ? undefined : schemaKeys(schema);
    const issues = err.validation.flatMap((v) => {
      const path = v.instancePath.split("/").filter(Boolean);
      const params = v.params as { keys?: unknown } | undefined;
      return fieldIssues(where === "body" ? path : [where, ...path], v.keyword, v.message ?? "invalid", params?.keys, known);
    });
    return new ApiError("VALIDATION_FAILED", "The request does not match the schema", issues);
  }
  if (err instanceof ZodError) return new ApiError("VALIDATION_FAILED", "The request does not match the schema", zodIssues(err));
  const code = "code" in err && typeof err.code === "string" ? fastifyCodes[err.code] : undefined;
  if (code) return new ApiError(code, err.message);
  const status = "statusCode" in err && typeof err.statusCode === "number" ? err.statusCode : 500;
  if (status === 413) return new ApiError("PAYLOAD_TOO_LARGE", "Request body is too large");
  if (status === 415) return new ApiError("UNSUPPORTED_MEDIA_TYPE", "Unsupported content type");
  if (status === 429) return new ApiError("RATE_LIMITED", "Too many requests");
  if (status === 503) return new ApiError("UNAVAILABLE", "Service unavailable");
  if (status >= 400 && status < 500) return new ApiError("VALIDATION_FAILED", err.message);
  return null;
}

export function sendError(reply: FastifyReply, request: FastifyRequest, err: ApiError) {
  const body: ErrorResponse = {
    error: { code: err.code, message: err.message, requestId: String(request.id), ...(err.issues ? { issues: err.issues } : {}) },
  };
  if (err.headers) reply.headers(err.headers);
  return reply.status(err.status).type("application/json").send(body);
}

function logFailure(request: FastifyRequest, err: Error, apiError: ApiError) {
  if (apiError.status < 500) return;
  // A 503 is a state (overload, shutdown, a database outage failing every request at once), not
  // a bug: a line each, without the stack. The last line of the cause: Prisma's start with the call site.
  if (apiError.code === "UNAVAILABLE") request.log.warn({ reason: err.message.trim().split("\n").pop() }, "unavailable");
  else request.log.error({ err }, "request failed");
}

/** Errors the router raises before a route runs (bad URL encoding, over-long parameters). */
export function frameworkErrorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const apiError = toApiError(err, request) ?? new ApiError("INTERNAL", "Internal error");
  logFailure(request, err, apiError);
  sendError(reply, request, apiError);
}

export function registerErrorHandling(app: FastifyInstance) {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    const apiError = toApiError(err, request);
    if (apiError) {
      logFailure(request, err, apiError);
      return sendError(reply, request, apiError);
    }
    if (isResponseSerializationError(err)) request.log.error({ err, issues: err.cause.issues }, "response did not match its schema");
    else request.log.error({ err }, "unexpected error");
    return sendError(reply, request, new ApiError("INTERNAL", "Internal error"));
  });
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, request, new ApiError("NOT_FOUND", `Route ${request.method} ${request.url.split("?")[0]} not found`)),
  );
}
