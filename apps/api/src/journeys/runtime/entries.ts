// Entries and wake-ups, from what was committed, never from memory. Two writers record signals
// (journey_signals) in the commits that cause them: the segment engine's evaluation, for users
// entering a segment a running journey uses (segments/engine/evaluate.ts), and the outbox
// hand-off below, for track events naming a running journey's entry event, in the transaction
// that drains them. The runtime takes signals by deleting them (FOR UPDATE SKIP LOCKED), so no
// signal is read twice or skipped, whatever order the commits happened in.
import type pg from "pg";
import { inTransaction } from "../../db/transaction.ts";
import type { OutboxRow } from "../../outbox/index.ts";
import { outboxKey } from "../../outbox/index.ts";
import type { LiveJourney } from "./advance.ts";

/** Signals taken per transaction. */
const SIGNAL_BATCH = 5000;
/** Two-key advisory lock space of a workspace's entries (the second key is hashtext(workspace id)). */
const ENTRY_LOCK_SPACE = 0x74646a65; // "tdje"

/**
 * The statement that starts runs for the users `source` selects (columns user_id, event; its
 * parameters from $6 on): at the entry's first node, due at once. A user with an active run of the
 * journey (the partial unique index: ON CONFLICT), or with any run when `anyRun` blocks (a journey
 * that cannot run twice for a user), is left out. The NOT EXISTS is a lookup by (workspace,
 * journey, user) on its index whatever the planner thinks of the source's size.
 */
function startRuns(source: string, anyRun: boolean) {
  return `INSERT INTO journey_runs (workspace_id, id, journey_id, version, user_id, node_id, waiting, due_at, event, entered_at, updated_at)
    SELECT $1, gen_random_uuid(), $2, $3, s.user_id, $4, false, $5, s.event, $5, $5
    FROM (${source}) s
    ${anyRun ? "WHERE NOT EXISTS (SELECT 1 FROM journey_runs r WHERE r.workspace_id = $1 AND r.journey_id = $2 AND r.user_id = s.user_id)" : ""}
    ON CONFLICT DO NOTHING`;
}

const entryParams = (workspaceId: string, j: LiveJourney, now: Date) => [workspaceId, j.id, j.version, j.definition.entryNode.child, now];

/** Members entered per statement when a journey starts: the first runs advance while the rest enter. */
const MEMBER_CHUNK = 5000;

/** Serializes a workspace's entries (for "at most one run ever"); call inside the transaction. */
const lockEntries = (db: pg.PoolClient, workspaceId: string) =>
  db.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [ENTRY_LOCK_SPACE, workspaceId]);

/**
 * Starts runs for the current members of an EntryNode journey's segment (when it starts), a chunk
 * of members per transaction, calling `entered` after each commit that started runs; a member who
 * has had a run since (entering meanwhile) is not started again.
 */
export async function enterMembers(db: pg.PoolClient, workspaceId: string, j: LiveJourney, now: Date, entered: () => Promise<unknown>) {
  const entry = j.definition.entryNode;
  if (entry.type !== "EntryNode") return;
  let after = "";
  for (;;) {
    const { rows } = await db.query<{ profile_id: string }>(
      `SELECT profile_id FROM segment_memberships WHERE workspace_id = $1 AND segment_id = $2 AND profile_id > $3
       ORDER BY profile_id LIMIT ${MEMBER_CHUNK}`,
      [workspaceId, entry.segment, after],
    );
    if (rows.length === 0) return;
    const started = await inTransaction(db, async () => {
      await lockEntries(db, workspaceId);
      const users = rows.map((r) => r.profile_id);
      const { rowCount } = await db.query(startRuns("SELECT unnest($6::text[]) AS user_id, NULL::jsonb AS event", true), [
        ...entryParams(workspaceId, j, now),
        users,
      ]);
      return rowCount ?? 0;
    });
    if (started > 0) await entered();
    after = rows[rows.length - 1]!.profile_id;
  }
}

/**
 * Takes one batch of the workspace's signals: starts the runs they cause in running journeys and
 * wakes the waiting runs of the users who entered a segment (a wait or the exit segment may be
 * satisfied: the run looks again). Returns how many signals it took.
 */
export async function takeSignals(
  db: pg.PoolClient,
  workspaceId: string,
  running: (db: pg.PoolClient) => Promise<LiveJourney[]>,
  now: Date,
): Promise<number> {
  return inTransaction(db, async () => {
    // One taker per workspace at a time, so "at most one run ever" holds between two takers.
    await lockEntries(db, workspaceId);
    const { rows } = await db.query<{ segment_id: string | null; message_id: string | null; user_id: string }>(
      `DELETE FROM journey_signals WHERE workspace_id = $1 AND id IN (
         SELECT id FROM journey_signals WHERE workspace_id = $1 ORDER BY id LIMIT ${SIGNAL_BATCH} FOR UPDATE SKIP LOCKED)
       RETURNING segment_id, message_id, user_id`,
      [workspaceId],
    );
    if (rows.length === 0) return 0;
    // Read after the signals: a signal is only written for a journey already running, so every
    // journey a signal taken here is for is seen (one started since an earlier read included).
    const journeys = await running(db);
    const entered = rows.filter((r) => r.segment_id !== null);
    const tracked = rows.flatMap((r) => (r.message_id !== null ? [r.message_id] : []));
    for (const j of journeys) {
      const entry = j.definition.entryNode;
      if (entry.type === "EntryNode") {
        const users = [...new Set(entered.filter((r) => r.segment_id === entry.segment).map((r) => r.user_id))];
        if (users.length === 0) continue;
        await db.query(startRuns("SELECT unnest($6::text[]) AS user_id, NULL::jsonb AS event", !j.canRunMultiple), [
          ...entryParams(workspaceId, j, now),
          users,
        ]);
      } else if (tracked.length > 0) {
        // The user's first such event of the batch starts the run; it is the run's `event`.
        await db.query(
          startRuns(
            `SELECT DISTINCT ON (e.profile_id) e.profile_id AS user_id,
              jsonb_build_object('event', e.event, 'messageId', e.message_id, 'userId', e.user_id, 'anonymousId', e.anonymous_id,
                'properties', coalesce(e.payload -> 'properties', '{}'::jsonb), 'timestamp', e.event_time) AS event
            FROM events_resolved e WHERE e.workspace_id = $1 AND e.message_id = ANY($6::text[]) AND e.event = $7
            ORDER BY e.profile_id, e.event_time, e.message_id`,
            !j.canRunMultiple,
          ),
          [...entryParams(workspaceId, j, now), tracked, entry.event],
        );
      }
    }
    const woken = [...new Set(entered.map((r) => r.user_id))];
    if (woken.length > 0) {
      await db.query(
        `UPDATE journey_runs SET due_at = $2 WHERE workspace_id = $1 AND status = 'Active' AND waiting AND due_at > $2
           AND user_id = ANY($3::text[])`,
        [workspaceId, now, woken],
      );
    }
    return rows.length;
  });
}

/**
 * The outbox hand-off (src/outbox): in the transaction that drains a batch, records the batch's
 * track events whose name starts a running journey as signals. Returns how many it recorded.
 */
export async function recordEventEntries(db: pg.PoolClient, workspaceId: string, rows: OutboxRow[], now: Date): Promise<number> {
  const messageIds = rows.flatMap((r) => r.track_ids);
  if (messageIds.length === 0) return 0;
  const { rows: entries } = await db.query<{ event: string }>(
    `SELECT DISTINCT definition -> 'entryNode' ->> 'event' AS event FROM journeys
     WHERE workspace_id = $1 AND status = 'Running' AND definition -> 'entryNode' ->> 'type' = 'EventEntryNode'`,
    [workspaceId],
  );
  const keys = new Set(rows.flatMap((r) => r.keys));
  const events = entries.map((e) => e.event).filter((e) => keys.has(outboxKey.event(e)));
  if (events.length === 0) return 0;
  const { rowCount } = await db.query(
    `INSERT INTO journey_signals (workspace_id, message_id, user_id, at)
     SELECT $1, e.message_id, e.profile_id, $4 FROM events_resolved e
     WHERE e.workspace_id = $1 AND e.message_id = ANY($2::text[]) AND e.event = ANY($3::text[])`,
    [workspaceId, messageIds, events, now],
  );
  return rowCount ?? 0;
}
