// The one error the SDK throws (admin) or reports to `onError` (ingestion).
import { type ErrorCode, type ErrorIssue, ErrorResponse, errorStatus } from "@tidings/schema";

/**
 * Codes for failures that have no server answer (`status` 0): `NETWORK` (connection refused or
 * reset, DNS, a request timeout), `QUEUE_FULL` and `CLOSED` (an event the ingestion client did not
 * accept), `INVALID_RESPONSE` (a 2xx body that does not match the operation's schema), `TIMEOUT`
 * (`broadcasts.wait` gave up). Events refused locally use the server's codes
 * (`VALIDATION_FAILED`, `PAYLOAD_TOO_LARGE`) with status 0.
 */
export type ClientErrorCode = "NETWORK" | "QUEUE_FULL" | "CLOSED" | "INVALID_RESPONSE" | "TIMEOUT";

/** Every `code` a TidingsApiError may carry: the server's closed list and the client's own. */
export type TidingsErrorCode = ErrorCode | ClientErrorCode;

const codeByStatus = new Map<number, ErrorCode>(Object.entries(errorStatus).map(([code, status]) => [status, code as ErrorCode]));

export class TidingsApiError extends Error {
  /** Stable across bundles: check `err.name === "TidingsApiError"` (or `isTidingsApiError`) rather than instanceof. */
  override readonly name = "TidingsApiError";
  constructor(
    /** The HTTP status; 0 when there was no response (network error, local check). */
    readonly status: number,
    readonly code: TidingsErrorCode,
    message: string,
    /** The server's request id (also in its logs); undefined when there was no response. */
    readonly requestId: string | undefined,
    /** For validation errors, one entry per offending field (e.g. `batch.3.event`). */
    readonly issues: ErrorIssue[] = [],
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  /** Builds the error from an HTTP status and body; tolerates bodies that are not our envelope. */
  static fromResponse(status: number, body: unknown, requestIdHeader?: string | null): TidingsApiError {
    const parsed = ErrorResponse.safeParse(body);
    if (parsed.success) {
      const e = parsed.data.error;
      const issues = e.issues ?? [];
      return new TidingsApiError(status, e.code, withFirstIssue(e.message, issues), e.requestId, issues);
    }
    // A proxy or load balancer answered (HTML, empty body): the status still says what happened.
    const code: ErrorCode =
      codeByStatus.get(status) ?? (status >= 500 ? "INTERNAL" : status === 401 ? "UNAUTHORIZED" : "VALIDATION_FAILED");
    return new TidingsApiError(status, code, `HTTP ${status}`, requestIdHeader ?? undefined);
  }
}

export function isTidingsApiError(err: unknown): err is TidingsApiError {
  return err instanceof Error && err.name === "TidingsApiError";
}

/**
 * The server's message followed by its first issue (`…: params.id: Invalid UUID`), so a log line
 * or an uncaught error says what to fix; every issue stays in `issues`.
 */
export function withFirstIssue(message: string, issues: readonly ErrorIssue[]): string {
  const first = issues[0];
  if (!first) return message;
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more in err.issues)` : "";
  return `${message}: ${first.path}: ${first.message}${more}`;
}

/** The same error about other issues (the events of a batch it names): its message names the new first issue. */
export function withIssues(err: TidingsApiError, issues: ErrorIssue[]): TidingsApiError {
  const first = err.issues[0];
  const at = first ? err.message.indexOf(`: ${first.path}: ${first.message}`) : -1;
  const base = at > 0 ? err.message.slice(0, at) : err.message;
  return new TidingsApiError(err.status, err.code, withFirstIssue(base, issues), err.requestId, issues);
}

/** `host:port` of a URL (the port the scheme implies when none is written), for messages. */
export function hostPort(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || (u.protocol === "https:" ? "443" : "80")}`;
  } catch {
    return undefined;
  }
}

/**
 * A failure before any response: the message names the host and port tried and the cause
 * (`Cannot reach 127.0.0.1:9: ECONNREFUSED`), which is kept as `cause`.
 */
export function networkError(err: unknown, url?: string): TidingsApiError {
  if (isTidingsApiError(err)) return err;
  const e = err as { name?: string; message?: string; code?: string; cause?: { code?: string; message?: string } };
  const timedOut = e?.name === "TimeoutError" || e?.code === "UND_ERR_HEADERS_TIMEOUT" || e?.code === "UND_ERR_BODY_TIMEOUT";
  const detail = e?.cause?.code ?? e?.code ?? e?.cause?.message ?? e?.message ?? String(err);
  const where = hostPort(url);
  const message = timedOut
    ? `Request${where ? ` to ${where}` : ""} timed out`
    : where
      ? `Cannot reach ${where}: ${detail}`
      : `Network error: ${detail}`;
  return new TidingsApiError(0, "NETWORK", message, undefined, [], { cause: err });
}
