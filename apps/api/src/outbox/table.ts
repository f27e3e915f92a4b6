// The outbox's table, segment_outbox, and every statement that reads or writes it: appending a
// change (ingestion's rows in its own statement, `recordChange` for the others), what waits, and
// the drain's reads and deletions. No other file names the table.
import type pg from "pg";
import { limit, type Param, prismaExecute, raw, type Sql, sql } from "../db/sql.ts";
import type { Tx } from "../db/upsert.ts";

/** Channel the outbox notifies on commit (payload: the workspace id). */
export const OUTBOX_CHANNEL = "tidings_segment_changes";

type Queryable = Pick<pg.PoolClient, "query">;

/** A pending row, as a drain reads it. */
export interface OutboxRow {
  id: string;
  /** Ids the change touched, as sent (user ids or linked ids). */
  ids: string[];
  keys: string[];
  /** messageIds of the commit's track events. */
  track_ids: string[];
  /** The commit's time (its transaction's). */
  created_at: Date;
}

/**
 * Records that `ids` (user ids or linked ids) changed in the ways `keys` name. Call it inside
 * the transaction of the change: the row and its NOTIFY exist iff it commits.
 */
export async function recordChange(
  tx: Pick<Tx, "$executeRawUnsafe" | "$queryRawUnsafe">,
  workspaceId: string,
  ids: string[],
  keys: string[],
) {
  if (ids.length === 0) return;
  await prismaExecute(
    tx,
    sql`INSERT INTO segment_outbox (workspace_id, ids, keys) VALUES (${workspaceId}::uuid, ${ids}::text[], ${keys}::text[])`,
  );
  await prismaExecute(tx, sql`SELECT pg_notify(${OUTBOX_CHANNEL}, ${workspaceId})`);
}

/**
 * Ingestion's append, as a part of its own statement: inserts the rows of `from` (aliased `o`:
 * workspace_id, and ids, keys, track_ids as JSON arrays) that something depends on
 * (`tidings_outbox_needed`), returning their workspace_id.
 */
export const appendRows = (from: Sql) => sql`INSERT INTO segment_outbox (workspace_id, ids, keys, track_ids)
  SELECT o.workspace_id, ARRAY(SELECT jsonb_array_elements_text(o.ids)), ARRAY(SELECT jsonb_array_elements_text(o.keys)),
    ARRAY(SELECT jsonb_array_elements_text(o.track_ids))
  FROM ${from}
  WHERE tidings_outbox_needed(o.workspace_id, ARRAY(SELECT jsonb_array_elements_text(o.keys)))
  RETURNING workspace_id`;

/**
 * Wakes the engine for the workspaces of `appended` (what `appendRows` returned, in the same
 * statement) whose outbox held nothing when the statement began: while rows are pending, the engine
 * is awake or woken by the commit that found it empty, and a refresh drains until it is empty. At
 * most one NOTIFY per workspace per drain, however many commits: commits that notify are serialized
 * by PostgreSQL. (The rows appended are not visible to this statement.)
 */
export const notifyIdle = (
  appended: Sql,
) => sql`SELECT pg_notify(${OUTBOX_CHANNEL}, w::text) FROM (SELECT DISTINCT workspace_id AS w FROM ${appended}) n
  WHERE NOT EXISTS (SELECT 1 FROM segment_outbox p WHERE p.workspace_id = n.w)`;

/** `appendRows` and `notifyIdle` as a statement of their own. */
export const appendChanges = (from: Sql) => sql`WITH ob AS (${appendRows(from)}) ${notifyIdle(raw("ob"))}`;

/** The workspace's next `n` pending rows, oldest first, leaving out `skip`. */
export async function readChanges(db: Queryable, workspaceId: string, skip: string[], n: number): Promise<OutboxRow[]> {
  const { rows } = await db.query<OutboxRow>(
    sql`SELECT id, ids, keys, coalesce(track_ids, '{}') AS track_ids, created_at FROM segment_outbox
      WHERE workspace_id = ${workspaceId} AND NOT (id = ANY(${skip}::bigint[])) ORDER BY id ${limit(n)}`,
  );
  return rows;
}

/** Deletes drained rows: how long each waited (s), from its commit. */
export async function removeChanges(db: Queryable, workspaceId: string, ids: string[]): Promise<number[]> {
  const { rows } = await db.query<{ age: number }>(
    sql`DELETE FROM segment_outbox WHERE workspace_id = ${workspaceId} AND id = ANY(${ids}::bigint[])
      RETURNING extract(epoch FROM clock_timestamp() - created_at)::float8 AS age`,
  );
  return rows.map((r) => r.age);
}

/** Which of `ids` are still pending. */
export async function stillPending(db: Queryable, workspaceId: string, ids: string[]): Promise<Set<string>> {
  const { rows } = await db.query<{ id: string }>(
    sql`SELECT id FROM segment_outbox WHERE workspace_id = ${workspaceId} AND id = ANY(${ids}::bigint[])`,
  );
  return new Set(rows.map((r) => r.id));
}

/** Whether the workspace has pending changes. */
export async function hasChanges(db: Queryable, workspaceId: string): Promise<boolean> {
  const { rows } = await db.query<{ pending: boolean }>(
    sql`SELECT EXISTS (SELECT 1 FROM segment_outbox WHERE workspace_id = ${workspaceId}) AS pending`,
  );
  return rows[0]!.pending;
}

/** A condition: the workspace `workspace` (an expression, e.g. a column) has pending changes. */
export const changesPendingIn = (workspace: Sql) => sql`EXISTS (SELECT 1 FROM segment_outbox o WHERE o.workspace_id = ${workspace})`;

/** When the workspace's oldest pending change was committed (an expression; NULL when none). */
export const oldestChangeOf = (workspace: Sql | Param) =>
  sql`(SELECT min(created_at) FROM segment_outbox WHERE workspace_id = ${workspace})`;

/** Seconds since the oldest pending change of any workspace was committed (0 when none): each workspace's first by the primary key, no scan of a backlog. */
export async function oldestChangeAge(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ age: number }>(
    `SELECT coalesce(extract(epoch FROM clock_timestamp() - min(o.created_at)), 0)::float8 AS age FROM workspaces w
     CROSS JOIN LATERAL (SELECT created_at FROM segment_outbox WHERE workspace_id = w.id ORDER BY id LIMIT 1) o`,
  );
  return rows[0]!.age;
}
