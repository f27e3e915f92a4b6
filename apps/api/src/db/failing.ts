// A stored definition (a segment's, a journey's) that fails when it is evaluated is isolated: the
// row is marked failing with the reason and a time to try again (a growing back-off), skipped
// until then, and the workspace's other definitions go on (docs/security.md).
import type { DefinitionFailure } from "@tidings/schema";
import pg from "pg";
import client from "prom-client";
import { ident, param, sql } from "./sql.ts";

/** A definition that cannot be evaluated as stored: not the database's fault, nor the network's. */
export class DefinitionError extends Error {
  override name = "DefinitionError";
}

/**
 * Whether `err` is the definition's own fault: a DefinitionError, or a PostgreSQL error of the
 * statement's data or text (SQLSTATE classes 22 data exception, 42 syntax or access rule, 54
 * program limit exceeded). Connection losses, serialization failures, deadlocks, cancels and
 * constraint violations are the moment's, and retried as before.
 */
export function isDefinitionFault(err: unknown): boolean {
  if (err instanceof DefinitionError) return true;
  return err instanceof pg.DatabaseError && /^(22|42|54)/.test(err.code ?? "");
}

/** First retry after this many seconds, doubling per failure in a row up to RETRY_MAX_S. */
const RETRY_FIRST_S = 5;
const RETRY_MAX_S = 3600;
/** A reason is kept to this many characters. */
const REASON_MAX = 500;

export type FailingTable = "segments" | "journeys";

/**
 * Marks the row failing with `reason` (on its own connection, outside any failed transaction),
 * to be tried again after the back-off; only while its definition is still `version` (a newer
 * one has not failed). `now` is the caller's clock.
 */
export async function markFailing(
  db: Pick<pg.Pool, "query">,
  table: FailingTable,
  row: { workspaceId: string; id: string },
  reason: string,
  now: Date,
  version: { column: "definition_updated_at"; value: Date } | { column: "version"; value: number },
): Promise<void> {
  const at = param(now);
  await db.query(
    sql`UPDATE ${ident(table)} SET evaluation_error = ${reason.slice(0, REASON_MAX)}, evaluation_failures = evaluation_failures + 1,
       evaluation_failed_at = coalesce(evaluation_failed_at, ${at}::timestamptz),
       evaluation_retry_at = ${at}::timestamptz + make_interval(secs => least(${RETRY_MAX_S}::float8, ${RETRY_FIRST_S}::float8 * 2 ^ least(evaluation_failures, 20)))
     WHERE workspace_id = ${row.workspaceId} AND id = ${row.id} AND ${ident(version.column)} = ${version.value}`,
  );
}

/** The SQL assignments that clear a row's failure (a success, or a new definition). */
export const CLEAR_FAILURE = "evaluation_error = NULL, evaluation_failures = 0, evaluation_failed_at = NULL, evaluation_retry_at = NULL";

/** The same, as Prisma data (a definition saved again is tried at once). */
export const FAILURE_CLEARED = { evaluationError: null, evaluationFailures: 0, evaluationFailedAt: null, evaluationRetryAt: null };

/** A row's `failing` field of its API resource, while it fails. */
export function definitionFailure(row: {
  evaluationError: string | null;
  evaluationFailures: number;
  evaluationFailedAt: Date | null;
  evaluationRetryAt: Date | null;
}): { failing?: DefinitionFailure } {
  if (row.evaluationError === null) return {};
  const since = (row.evaluationFailedAt ?? new Date()).getTime();
  return {
    failing: {
      reason: row.evaluationError,
      since,
      failures: row.evaluationFailures,
      retryAt: (row.evaluationRetryAt ?? new Date(since)).getTime(),
    },
  };
}

/** `tidings_definitions_failing{kind}`: the segments and journeys set aside, counted at each scrape. */
export function registerFailingGauge(registry: client.Registry, pool: Pick<pg.Pool, "query">) {
  new client.Gauge({
    name: "tidings_definitions_failing",
    help: "Segments and journeys set aside because their evaluation fails (GET shows `failing` with the reason); retried with back-off",
    labelNames: ["kind"] as const,
    registers: [registry],
    async collect() {
      const counted = pool.query<{ segment: number; journey: number }>(
        `SELECT (SELECT count(*) FROM segments WHERE evaluation_error IS NOT NULL)::int AS segment,
           (SELECT count(*) FROM journeys WHERE evaluation_error IS NOT NULL)::int AS journey`,
      );
      const counts = await counted.then((r) => r.rows[0]!).catch(() => ({ segment: Number.NaN, journey: Number.NaN }));
      this.set({ kind: "segment" }, counts.segment);
      this.set({ kind: "journey" }, counts.journey);
    },
  });
}
