// Entries and wake-ups, from what was committed, never from memory. Two writers record signals
// (journey_signals) in the commits that cause them: the segment engine's evaluation, for users
// entering a segment a running journey uses (segments/engine/evaluate.ts), and the outbox
// hand-off below, for track events naming a running journey's entry event, in the transaction
// that drains them. The runtime takes signals by deleting them (FOR UPDATE SKIP LOCKED), so no
// signal is read twice or skipped, whatever order the commits happened in.
import type pg from "pg";
import { empty, limit, param, type Sql, sql } from "../../db/sql.ts";
import { inTransaction } from "../../db/transaction.ts";
import type { OutboxRow } from "../../outbox/index.ts";
import { outboxKey } from "../../outbox/index.ts";
import type { LiveJourney } from "./advance.ts";
import type { EnterHook } from "../../segments/index.ts";

/** Signals taken per transaction. */
const SIGNAL_BATCH = 5000;
/** Two-key advisory lock space of a workspace's entries (the second key is hashtext(workspace id)). */
const ENTRY_LOCK_SPACE = 0x74646a65; // "tdje"

/** The inputs of an entry into a journey, each one parameter wherever a statement uses it. */
const entryInputs = (workspaceId: string, j: LiveJourney, now: Date) => ({
  workspace: param(workspaceId),
  journey: param(j.id),
  version: param(j.version),
  node: param(j.definition.entryNode.child),
  now: param(now),
});
type EntryInputs = ReturnType<typeof entryInputs>;

/**
 * The statement that starts runs for the users `source` selects (columns user_id, event; it may
 * use the entry's inputs): at the entry's first node, due at once. A user with an active run of the
 * journey (the partial unique index: ON CONFLICT), or with any run when `anyRun` blocks (a journey
 * that cannot run twice for a user), is left out. The NOT EXISTS is a lookup by (workspace,
 * journey, user) on its index whatever the planner thinks of the source's size.
 */
function startRuns(inputs: EntryInputs, source: Sql, anyRun: boolean): Sql {
  const { workspace, journey, version, node, now } = inputs;
  return sql`INSERT INTO journey_runs (workspace_id, id, journey_id, version, user_id, node_id, waiting, due_at, event, entered_at, updated_at)
    SELECT ${workspace}, gen_random_uuid(), ${journey}, ${version}, s.user_id, ${node}, false, ${now}, s.event, ${now}, ${now}
    FROM (${source}) s
    ${anyRun ? sql`WHERE NOT EXISTS (SELECT 1 FROM journey_runs r WHERE r.workspace_id = ${workspace} AND r.journey_id = ${journey} AND r.user_id = s.user_id)` : empty}
    ON CONFLICT DO NOTHING`;
}

/** A source of `startRuns`: these users, without an event. */
const usersSource = (users: string[]) => sql`SELECT unnest(${users}::text[]) AS user_id, NULL::jsonb AS event`;

/** Members entered per statement when a journey starts: the first runs advance while the rest enter. */
const MEMBER_CHUNK = 5000;

/** Serializes a workspace's entries (for "at most one run ever"); call inside the transaction. */
const lockEntries = (db: pg.PoolClient, workspaceId: string) =>
  db.query(sql`SELECT pg_advisory_xact_lock(${ENTRY_LOCK_SPACE}, hashtext(${workspaceId}))`);

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
      sql`SELECT profile_id FROM segment_memberships WHERE workspace_id = ${workspaceId} AND segment_id = ${entry.segment} AND profile_id > ${after}
       ORDER BY profile_id ${limit(MEMBER_CHUNK)}`,
    );
    if (rows.length === 0) return;
    const started = await inTransaction(db, async () => {
      await lockEntries(db, workspaceId);
      const users = rows.map((r) => r.profile_id);
      const { rowCount } = await db.query(startRuns(entryInputs(workspaceId, j, now), usersSource(users), true));
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
    const ws = param(workspaceId);
    const { rows } = await db.query<{ segment_id: string | null; message_id: string | null; user_id: string }>(
      sql`DELETE FROM journey_signals WHERE workspace_id = ${ws} AND id IN (
         SELECT id FROM journey_signals WHERE workspace_id = ${ws} ORDER BY id ${limit(SIGNAL_BATCH)} FOR UPDATE SKIP LOCKED)
       RETURNING segment_id, message_id, user_id`,
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
        await db.query(startRuns(entryInputs(workspaceId, j, now), usersSource(users), !j.canRunMultiple));
      } else if (tracked.length > 0) {
        // The user's first such event of the batch starts the run; it is the run's `event`.
        const inputs = entryInputs(workspaceId, j, now);
        await db.query(
          startRuns(
            inputs,
            sql`SELECT DISTINCT ON (e.profile_id) e.profile_id AS user_id,
              jsonb_build_object('event', e.event, 'messageId', e.message_id, 'userId', e.user_id, 'anonymousId', e.anonymous_id,
                'properties', coalesce(e.payload -> 'properties', '{}'::jsonb), 'timestamp', e.event_time) AS event
            FROM events_resolved e WHERE e.workspace_id = ${inputs.workspace} AND e.message_id = ANY(${tracked}::text[]) AND e.event = ${entry.event}
            ORDER BY e.profile_id, e.event_time, e.message_id`,
            !j.canRunMultiple,
          ),
        );
      }
    }
    const woken = [...new Set(entered.map((r) => r.user_id))];
    if (woken.length > 0) {
      const at = param(now);
      await db.query(
        sql`UPDATE journey_runs SET due_at = ${at} WHERE workspace_id = ${ws} AND status = 'Active' AND waiting AND due_at > ${at}
           AND user_id = ANY(${woken}::text[])`,
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
    sql`SELECT DISTINCT definition -> 'entryNode' ->> 'event' AS event FROM journeys
     WHERE workspace_id = ${workspaceId} AND status = 'Running' AND definition -> 'entryNode' ->> 'type' = 'EventEntryNode'`,
  );
  const keys = new Set(rows.flatMap((r) => r.keys));
  const events = entries.map((e) => e.event).filter((e) => keys.has(outboxKey.event(e)));
  if (events.length === 0) return 0;
  const ws = param(workspaceId);
  const { rowCount } = await db.query(
    sql`INSERT INTO journey_signals (workspace_id, message_id, user_id, at)
     SELECT ${ws}, e.message_id, e.profile_id, ${now} FROM events_resolved e
     WHERE e.workspace_id = ${ws} AND e.message_id = ANY(${messageIds}::text[]) AND e.event = ANY(${events}::text[])`,
  );
  return rowCount ?? 0;
}

/**
 * The runtime's record of a segment's enters (SegmentEngine.recordEntersWith), in the evaluation's
 * statement: a signal per user entering a segment a journey holds (segment_references), which the
 * runtime takes to start or wake runs.
 */
export const journeySignalsOnEnter: EnterHook = ({ workspaceId: ws, segmentId: id, at, entered }) =>
  sql`INSERT INTO journey_signals (workspace_id, segment_id, user_id, at)
      SELECT ${ws}, ${id}::uuid, profile_id, ${at} FROM ${entered}
      WHERE EXISTS (SELECT 1 FROM segment_references sr
        WHERE sr.workspace_id = ${ws} AND sr.target_id = ${id}::uuid AND sr.referrer_kind = 'Journey')
      RETURNING 1`;
