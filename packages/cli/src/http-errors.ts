// The API's error envelope read from a raw response (bulk import posts without the SDK).
import { ErrorResponse } from "@tidings/schema";
import { ApiError } from "./errors.js";

/** The envelope as an ApiError; tolerates bodies that are not the envelope (a proxy's page). */
export function toApiError(status: number, text: string, requestIdHeader: string | null): ApiError {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const parsed = ErrorResponse.safeParse(body);
  if (parsed.success) {
    const e = parsed.data.error;
    return new ApiError(status, e.code, e.message, e.requestId, e.issues ?? []);
  }
  return new ApiError(status, status >= 500 ? "INTERNAL" : "HTTP_ERROR", `HTTP ${status}`, requestIdHeader ?? undefined);
}
