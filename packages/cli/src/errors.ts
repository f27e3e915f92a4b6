// The CLI's error kinds and how each reaches the terminal: a usage error exits 2, an API error
// exits 1, and neither prints a stack trace.

/** A mistake in how the CLI was invoked or in the files it was given; nothing was sent. Exit 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
  constructor(
    message: string,
    /** Lines printed under the message (e.g. one per invalid field). */
    readonly details: string[] = [],
  ) {
    super(message);
  }
}

export interface Issue {
  path: string;
  message: string;
}

/**
 * An error answered by the API (or a failure to reach it). Exit 1. The SDK's `TidingsApiError`
 * has the same fields and is reported the same way (see `apiErrorFields`).
 */
export class ApiError extends Error {
  override readonly name = "ApiError";
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId: string | undefined,
    readonly issues: Issue[] = [],
  ) {
    super(message);
  }
}

/** A failure that is neither: a file that cannot be written, an import that gave up. Exit 1. */
export class CliError extends Error {
  override readonly name = "CliError";
  constructor(
    message: string,
    readonly details: string[] = [],
  ) {
    super(message);
  }
}

/** The fields of an API error, from this CLI's `ApiError` or the SDK's `TidingsApiError`. */
function apiErrorFields(err: unknown): ApiError | undefined {
  if (!(err instanceof Error) || (err.name !== "ApiError" && err.name !== "TidingsApiError")) return undefined;
  return err as ApiError;
}

/** Formats `err` for stderr and says which exit code it stands for. */
export function describeError(err: unknown): { lines: string[]; exitCode: number } {
  if (err instanceof UsageError) return { lines: [`error: ${err.message}`, ...err.details.map((d) => `  ${d}`)], exitCode: 2 };
  const api = apiErrorFields(err);
  if (api) {
    const lines = [`error: ${api.message}${api.code ? ` (${api.code}${api.status ? `, HTTP ${api.status}` : ""})` : ""}`];
    for (const issue of api.issues ?? []) lines.push(`  ${issue.path || "(body)"}: ${issue.message}`);
    if (api.requestId) lines.push(`  request id: ${api.requestId}`);
    return { lines, exitCode: 1 };
  }
  if (err instanceof CliError) return { lines: [`error: ${err.message}`, ...err.details.map((d) => `  ${d}`)], exitCode: 1 };
  const message = err instanceof Error ? err.message : String(err);
  return { lines: [`error: ${message}`], exitCode: 1 };
}

/** Issue lines from a zod error, each naming the field (`definition.nodes.1.type: …`). */
export function zodIssues(error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] }, prefix = ""): string[] {
  return error.issues.map((i) => {
    const path = [prefix, ...i.path.map(String)].filter(Boolean).join(".");
    return `${path || "(document)"}: ${i.message}`;
  });
}
