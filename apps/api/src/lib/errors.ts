// The one error model, without the web layer: ApiError carries a code of the closed list (its
// status comes from @tidings/schema); the HTTP error handler (http/errors.ts) turns every error
// into the envelope. Small helpers for error text live here too.
import { type ErrorCode, type ErrorIssue, errorStatus, explainIssues, type RawIssue } from "@tidings/schema";
import type { ZodError } from "zod";

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
 * Our issue list from zod's (or Fastify's zod provider's) issues, paths prefixed (e.g. with
 * `batch`): one per mistake (explainIssues: an unknown key at its own path with the closest key
 * meant, a missing field once).
 */
export function issuesFrom(raw: readonly RawIssue[], prefix: readonly PropertyKey[] = [], schema?: unknown): ErrorIssue[] {
  const prefixed = raw.map((i) => ({ ...i, path: [...prefix, ...i.path] }));
  return explainIssues(prefixed, schema).map((i) => ({ path: joinPath(i.path), message: i.message }));
}

/** Turns zod issues into our issue list, prefixing paths (e.g. with `batch`). */
export function zodIssues(err: ZodError, prefix: (string | number)[] = [], schema?: unknown): ErrorIssue[] {
  return issuesFrom(
    err.issues.map((i) => ({ path: i.path, code: i.code, message: i.message, keys: "keys" in i ? i.keys : undefined })),
    prefix,
    schema,
  );
}

/** The message of anything thrown, for a log line or a reason. */
export const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));
