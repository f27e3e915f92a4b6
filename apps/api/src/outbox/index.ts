// The change outbox (table segment_outbox): one protocol for everything that must react to a
// committed change — the segment engine and the journey runtime. A change writes its row in its
// own transaction (ingestion's statements in ingest/sql.ts, everything else through
// `recordChange`), and the row's NOTIFY on OUTBOX_CHANNEL is delivered only if it commits. The
// segment engine drains the rows (segments/engine) and, in the transaction that deletes them,
// hands each drained batch to the outbox's other consumers (`OutboxHandOff`): nothing reads the
// table by increasing id, so rows committed out of order are never skipped.
//
// Keys say what changed, typed here and nowhere else: a segment's dependencies
// (segments/engine/compile.ts) are keys of the same kinds.
import type pg from "pg";
import { prismaExecute, sql } from "../db/sql.ts";
import type { Tx } from "../db/upsert.ts";

/** Channel the outbox notifies on commit (payload: the workspace id). */
export const OUTBOX_CHANNEL = "tidings_segment_changes";

/**
 * Who depends on a workspace's changes is decided where the commit is made: ingestion writes its
 * outbox row only when a segment's keys (`segments.depends_on`, set with the definition) or a
 * running journey's entry event meet the commit's keys (SQL function `tidings_outbox_needed`,
 * migration 20261125174500_outbox_dependents), under this advisory lock shared. A change to who
 * depends (a definition saved, a journey started, paused or changed) takes it exclusively in its
 * transaction: commits under way finish first (the recompute that follows sees them), and later
 * ones see the change.
 */
export const DEPENDENTS_LOCK_SPACE = 0x74646470; // "tddp"

/** Call in the transaction that changes who depends on the workspace's changes. */
export async function lockDependents(tx: Pick<Tx, "$executeRawUnsafe" | "$queryRawUnsafe">, workspaceId: string) {
  await prismaExecute(tx, sql`SELECT pg_advisory_xact_lock(${DEPENDENTS_LOCK_SPACE}::int, hashtext(${workspaceId}))`);
}

/** What a change touched. */
export const outboxKey = {
  /** Track events with this name. */
  event: (name: string) => `e:${name}`,
  /** The event name of an `event` key; null for any other key. */
  eventName: (key: string): string | null => (key.startsWith("e:") ? key.slice(2) : null),
  /** The top-level trait `key`. */
  trait: (key: string) => `t:${key}`,
  /** Subscription assignments of a group. */
  group: (groupId: string) => `sg:${groupId}`,
  /** Hand-set segment members. */
  manual: "manual",
  /** Anything (linked identities, deleted users): every segment is affected. */
  any: "*",
} as const;

/** A drained outbox row, as the engine read it. */
export interface OutboxRow {
  id: string;
  /** Ids the change touched, as sent (user ids or linked ids). */
  ids: string[];
  keys: string[];
  /** messageIds of the commit's track events. */
  track_ids: string[];
}

/**
 * A consumer of drained rows besides the segment engine: called in the transaction that deletes
 * them, so what it records commits with the deletion or not at all. Returns how many journey
 * signals it recorded (the engine then wakes the journey runtime).
 */
export type OutboxHandOff = (db: pg.PoolClient, workspaceId: string, rows: OutboxRow[]) => Promise<number>;

/**
 * Records that `ids` (user ids or linked ids) changed in the ways `keys` name. Call it inside
 * the transaction of the change.
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
