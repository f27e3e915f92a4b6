// The CLI's error kinds and how each reaches the terminal: a usage error exits 2, an API error
// (the SDK's `TidingsApiError`: status, code, message, request id, issues) exits 1, and neither
// prints a stack trace.
import { explainIssues } from "@tidings/schema";
import { isTidingsApiError, TidingsApiError } from "@tidings/sdk";

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

/**
 * No resource of that name in a list the API answered: the server's NOT_FOUND, with status 0 as
 * the SDK gives its local checks (there was no 404).
 */
export function notFoundByName(noun: string, name: string): TidingsApiError {
  return new TidingsApiError(0, "NOT_FOUND", `no ${noun} named "${name}"`, undefined);
}

/** Formats `err` for stderr and says which exit code it stands for. */
export function describeError(err: unknown): { lines: string[]; exitCode: number } {
  if (err instanceof UsageError) return { lines: [`error: ${err.message}`, ...err.details.map((d) => `  ${d}`)], exitCode: 2 };
  if (isTidingsApiError(err)) {
    const lines = [`error: ${err.message} (${err.code}${err.status ? `, HTTP ${err.status}` : ""})`];
    for (const issue of err.issues as ((typeof err.issues)[number] & { location?: string })[]) {
      lines.push(`  ${issue.location ? `${issue.location}: ` : ""}${issue.path || "(body)"}: ${issue.message}`);
    }
    if (err.requestId) lines.push(`  request id: ${err.requestId}`);
    return { lines, exitCode: 1 };
  }
  if (err instanceof CliError) return { lines: [`error: ${err.message}`, ...err.details.map((d) => `  ${d}`)], exitCode: 1 };
  const message = err instanceof Error ? err.message : String(err);
  return { lines: [`error: ${message}`], exitCode: 1 };
}

/**
 * Issue lines from a zod error, one per mistake, each naming the field (`definition.nodes.1.type:
 * …`); with the schema, an unknown key names the closest known one (`within_seconds` →
 * "withinSeconds"), or the missing one it stands for (`chlid` → "child").
 */
export function zodIssues(
  error: { issues: readonly { path: readonly PropertyKey[]; message: string; code?: string; keys?: readonly string[] }[] },
  prefix = "",
  schema?: unknown,
): string[] {
  return explainIssues(error.issues, schema).map(
    (i) => `${[prefix, ...i.path.map(String)].filter(Boolean).join(".") || "(document)"}: ${i.message}`,
  );
}
