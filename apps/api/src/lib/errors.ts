// The one error model, without the web layer: ApiError carries a code of the closed list (its
// status comes from @tidings/schema); the HTTP error handler (http/errors.ts) turns every error
// into the envelope. Small helpers for error text live here too.
import { didYouMean, type ErrorCode, type ErrorIssue, errorStatus, schemaKeys } from "@tidings/schema";
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
 * One issue per offending field. zod reports all unknown keys of an object in one
 * `unrecognized_keys` issue at the object's path; each key gets its own issue, the key appended
 * to the path, so the client sees which field to fix — and the closest field the schema knows
 * (`within_seconds` → did you mean "withinSeconds"?).
 */
export function fieldIssues(path: readonly PropertyKey[], code: string, message: string, keys: unknown, known?: Set<string>): ErrorIssue[] {
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

/** The message of anything thrown, for a log line or a reason. */
export const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));
