// The one error the SDK throws for API failures.
import { type ErrorCode, type ErrorIssue, ErrorResponse } from "@tidings/schema";

export class TidingsApiError extends Error {
  /** Stable across bundles: check `err.name === "TidingsApiError"` rather than instanceof. */
  override readonly name = "TidingsApiError";
  constructor(
    readonly status: number,
    readonly code: ErrorCode | "NETWORK",
    message: string,
    readonly requestId: string | undefined,
    readonly issues: ErrorIssue[] = [],
  ) {
    super(message);
  }

  /** Builds the error from an HTTP status and body; tolerates bodies that are not our envelope. */
  static fromResponse(status: number, body: unknown, requestIdHeader?: string | null): TidingsApiError {
    const parsed = ErrorResponse.safeParse(body);
    if (parsed.success) {
      const e = parsed.data.error;
      return new TidingsApiError(status, e.code, e.message, e.requestId, e.issues ?? []);
    }
    const code: ErrorCode = status >= 500 ? "INTERNAL" : status === 401 ? "UNAUTHORIZED" : "VALIDATION_FAILED";
    return new TidingsApiError(status, code, `HTTP ${status}`, requestIdHeader ?? undefined);
  }
}

export function isTidingsApiError(err: unknown): err is TidingsApiError {
  return err instanceof Error && err.name === "TidingsApiError";
}
