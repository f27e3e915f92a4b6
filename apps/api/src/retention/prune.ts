// Retention's statements: each prunes one bounded batch of one workspace (a lone statement, so
// its own short transaction), and `pruneSlice` runs them workspace by workspace for a bounded
// time, returning where the next slice resumes.
import type pg from "pg";
import { empty, type Param, param, type Sql, sql } from "../db/sql.ts";
import { oldestChangeOf } from "../outbox/index.ts";

/** What retention removes: events, segment membership history and size history, deliveries' rendered messages. */
export type PruneKind = "events" | "membership_changes" | "segment_sizes" | "delivery_bodies";

export const PRUNE_KINDS: readonly PruneKind[] = ["events", "membership_changes", "segment_sizes", "delivery_bodies"];

/** Where a slice resumes: `kind`, at the first workspace whose id is ≥ `from` (null: the first). */
export interface PruneCursor {
  kind: PruneKind;
  from: string | null;
}

const DAY_MS = 86_400_000;

/**
 * One batch: at most `size` rows of workspace `ws` older than `cutoff`, locked with SKIP LOCKED so two
 * pruners (or a sender holding a delivery) never wait for each other, then deleted or cleared
 * by primary key. The selection is a MATERIALIZED CTE: as a subquery joined to the table, the
 * planner may rescan it per row, and each rescan (skipping the rows this statement already
 * locked) finds more, so one statement deleted every old row (seen in the bounded-batch test).
 *
 * Events stay while something still has to read them: an event whose commit the segment engine
 * has not drained yet (its outbox row, written in the same transaction, is at least as old as
 * its received_at) or that a journey signal names (the runtime reads it to start a run).
 */
const BATCH: Record<PruneKind, (ws: Param, cutoff: Date, size: number) => Sql> = {
  events: (ws, cutoff, size) => sql`WITH old AS MATERIALIZED (
      SELECT o.message_id FROM events o
      WHERE o.workspace_id = ${ws} AND o.event_time < ${cutoff}
        AND o.received_at < coalesce(${oldestChangeOf(ws)}, 'infinity')
        AND NOT EXISTS (SELECT 1 FROM journey_signals s WHERE s.workspace_id = ${ws} AND s.message_id = o.message_id)
      LIMIT ${size} FOR UPDATE OF o SKIP LOCKED)
    DELETE FROM events e USING old WHERE e.workspace_id = ${ws} AND e.message_id = old.message_id`,
  membership_changes: (ws, cutoff, size) => sql`WITH old AS MATERIALIZED (
      SELECT id FROM segment_membership_changes WHERE workspace_id = ${ws} AND at < ${cutoff}
      LIMIT ${size} FOR UPDATE SKIP LOCKED)
    DELETE FROM segment_membership_changes c USING old WHERE c.workspace_id = ${ws} AND c.id = old.id`,
  // A segment's size at the cutoff stays (its newest row at or before it): the history answers
  // for the hours after the cutoff, whenever the segment last changed.
  segment_sizes: (ws, cutoff, size) => sql`WITH old AS MATERIALIZED (
      SELECT s.segment_id, s.hour FROM segment_sizes s
      WHERE s.workspace_id = ${ws} AND s.hour < ${cutoff}
        AND EXISTS (SELECT 1 FROM segment_sizes n
          WHERE n.workspace_id = ${ws} AND n.segment_id = s.segment_id AND n.hour > s.hour AND n.hour <= ${cutoff})
      LIMIT ${size} FOR UPDATE OF s SKIP LOCKED)
    DELETE FROM segment_sizes z USING old WHERE z.workspace_id = ${ws} AND z.segment_id = old.segment_id AND z.hour = old.hour`,
  // Settled deliveries only: a queued one still needs its context to be rendered. The row stays:
  // it is the send's record (status, reason, contact) and what keeps a user from being sent the
  // same broadcast or journey step twice.
  delivery_bodies: (ws, cutoff, size) => sql`WITH old AS MATERIALIZED (
      SELECT id FROM deliveries
      WHERE workspace_id = ${ws} AND created_at < ${cutoff} AND (rendered IS NOT NULL OR context IS NOT NULL)
        AND status IN ('Sent', 'Failed', 'Skipped')
      LIMIT ${size} FOR UPDATE SKIP LOCKED)
    UPDATE deliveries d SET rendered = NULL, context = NULL FROM old WHERE d.workspace_id = ${ws} AND d.id = old.id`,
};

/** The age beyond which `kind` is pruned, or null when its retention is off. */
/** How long what is kept is kept, in days (null: forever). */
export interface RetentionPolicy {
  /** Events older than this (by event time) and segment membership history as old are deleted. */
  eventDays: number | null;
  /** Settled deliveries created longer ago than this lose their rendered message (the row stays). */
  deliveryDays: number | null;
}

function retentionDays(policy: RetentionPolicy, kind: PruneKind): number | null {
  return kind === "delivery_bodies" ? policy.deliveryDays : policy.eventDays;
}

export function retentionEnabled(policy: RetentionPolicy): boolean {
  return PRUNE_KINDS.some((k) => retentionDays(policy, k) !== null);
}

export interface SliceOptions {
  policy: RetentionPolicy;
  /** Rows per statement. */
  batchSize: number;
  /** The slice ends after the statement that passes this many milliseconds (at least one runs). */
  sliceMs: number;
  now: number;
  onPruned?: (kind: PruneKind, rows: number) => void;
  /** Aborted: end the slice after the current statement. */
  stopping?: AbortSignal;
}

/** Workspaces read per query while walking them. */
const WORKSPACE_PAGE = 100;

/**
 * Prunes from `cursor` (null: the start) for about `sliceMs`, one batch per statement; returns
 * where the next slice resumes, or null when nothing older than the retention is left.
 */
export async function pruneSlice(pool: pg.Pool, o: SliceOptions, cursor: PruneCursor | null): Promise<PruneCursor | null> {
  const started = performance.now();
  const kinds = PRUNE_KINDS.filter((k) => retentionDays(o.policy, k) !== null);
  let k = cursor ? kinds.indexOf(cursor.kind) : 0;
  let from = cursor && k >= 0 ? cursor.from : null;
  if (k < 0) k = 0;
  let statements = 0;
  const spent = () => statements > 0 && (performance.now() - started >= o.sliceMs || o.stopping?.aborted);
  for (; k < kinds.length; k++, from = null) {
    const kind = kinds[k]!;
    const cutoff = new Date(o.now - retentionDays(o.policy, kind)! * DAY_MS);
    for (;;) {
      const { rows } = await pool.query<{ id: string }>(
        sql`SELECT id FROM workspaces ${from === null ? empty : sql`WHERE id >= ${from} `}ORDER BY id LIMIT ${WORKSPACE_PAGE}`,
      );
      for (const { id } of rows) {
        for (;;) {
          if (spent()) return { kind, from: id };
          const { rowCount } = await pool.query(BATCH[kind](param(id), cutoff, o.batchSize));
          statements++;
          const n = rowCount ?? 0;
          if (n > 0) o.onPruned?.(kind, n);
          if (n < o.batchSize) break; // this workspace has no more (or only rows locked by another pruner)
        }
      }
      if (rows.length < WORKSPACE_PAGE) break;
      from = nextId(rows[rows.length - 1]!.id);
    }
  }
  return null;
}

/** The smallest UUID greater than `id` (the workspaces after it, with `>=`). */
function nextId(id: string): string {
  const hex = id.replace(/-/g, "");
  const next = (BigInt(`0x${hex}`) + 1n).toString(16).padStart(32, "0");
  return `${next.slice(0, 8)}-${next.slice(8, 12)}-${next.slice(12, 16)}-${next.slice(16, 20)}-${next.slice(20)}`;
}
