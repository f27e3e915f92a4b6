// One error model: ApiError carries a code of the closed list; the Fastify error handler maps
// every error (ours, zod's, Fastify's own) to the envelope and never leaks internals on 5xx.
import type { ErrorCode, ErrorResponse } from "@tidings/schema";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from "fastify-type-provider-zod";
import { ZodError } from "zod";
import { isDatabaseRefusing, isDatabaseUnavailable } from "../db/errors.ts";
import { ApiError, databaseRefusing, databaseUnavailable, issuesFrom, zodIssues } from "../lib/errors.ts";

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
    const raw = err.validation.map((v) => {
      const keys = (v.params as { keys?: unknown } | undefined)?.keys;
      const path = v.instancePath.split("/").filter(Boolean);
      return { path, code: v.keyword, message: v.message ?? "invalid", keys: Array.isArray(keys) ? keys : undefined };
    });
    const issues = issuesFrom(raw, where === "body" ? [] : [where], schema);
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
