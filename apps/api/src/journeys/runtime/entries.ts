// Entries and wake-ups, from what was committed, never from memory. Two writers record signals
// (journey_signals) in the commits that cause them: the segment engine's evaluation, for users
// entering a segment a running journey uses (segments/engine/evaluate.ts), and the outbox
// hand-off below, for track events naming a running journey's entry event, in the transaction
// that drains them. The runtime takes signals by deleting them (FOR UPDATE SKIP LOCKED), so no
// signal is read twice or skipped, whatever order the commits happened in. A run is written once
// when it starts: where the nodes that decide at once take it, with its messages (startRuns).
import type pg from "pg";
import { randomUUID } from "node:crypto";
import { isDefinitionFault } from "../../db/failing.ts";
import { empty, limit, param, sql } from "../../db/sql.ts";
import { inTransaction } from "../../db/transaction.ts";
import type { OutboxRow } from "../../outbox/index.ts";
import { outboxKey } from "../../outbox/index.ts";
import { wakeJourneySenders } from "../delivery-source.ts";
import { type AdvanceDeps, decide, type Final, type LiveJourney, record, stepContext } from "./advance.ts";
import type { RunState } from "./nodes.ts";
import type { EnterHook } from "../../segments/index.ts";

/** Signals taken per transaction. */
const SIGNAL_BATCH = 5000;
/** Two-key advisory lock space of a workspace's entries (the second key is hashtext(workspace id)). */
export const ENTRY_LOCK_SPACE = 0x74646a65; // "tdje"

/** A user entering a journey, with the track event that starts the run (EventEntryNode: its JSON text) or null. */
interface Entrant {
  userId: string;
  event: string | null;
}

/**
 * Starts runs, in the caller's transaction (under the entry lock), for the entrants who may: no
 * active run of the journey (the partial unique index), or no run at all when `anyRun` blocks (a
 * journey that cannot run twice for a user); a user listed twice enters once. The new runs are moved
 * at once, as a due run is (advance.ts: the exit segment, then every node that decides at once), and
 * each is written once, where it waits or ends, with its messages and the node counts: a message
 * node right after the entry queues its deliveries in the entering commit. A journey marked failing,
 * or whose nodes fail on these runs (the definition's fault), gets them at its first node, due now,
 * as before: the runtime's advance meets the fault and sets the journey aside. Returns how many runs
 * started and whether messages were queued (the caller wakes the senders after its commit).
 */
async function startRuns(
  db: pg.PoolClient,
  deps: AdvanceDeps,
  workspaceId: string,
  j: LiveJourney,
  candidates: Entrant[],
  now: Date,
  anyRun: boolean,
): Promise<{ started: number; queued: boolean }> {
  const byUser = new Map<string, Entrant>();
  for (const e of candidates) if (!byUser.has(e.userId)) byUser.set(e.userId, e);
  const entrants = [...byUser.values()];
  // The NOT EXISTS is a lookup by (workspace, user, journey) on the runs' index.
  const { rows } = await db.query<{ i: number }>(
    sql`SELECT (u.ord - 1)::int AS i FROM unnest(${entrants.map((e) => e.userId)}::text[]) WITH ORDINALITY u(user_id, ord)
     WHERE NOT EXISTS (SELECT 1 FROM journey_runs r WHERE r.workspace_id = ${workspaceId} AND r.journey_id = ${j.id} AND r.user_id = u.user_id
       ${anyRun ? empty : sql`AND r.status = 'Active'`})`,
  );
  if (rows.length === 0) return { started: 0, queued: false };
  const events = new Map<string, string>();
  const runs = rows.map(({ i }): RunState => {
    const e = entrants[i]!;
    const id = randomUUID();
    if (e.event !== null) events.set(id, e.event);
    const event = e.event === null ? null : (JSON.parse(e.event) as Record<string, unknown>);
    return { id, userId: e.userId, version: j.version, nodeId: j.definition.entryNode.child, waiting: false, waitUntil: null, event };
  });
  const insert = (finals: Final[]) => insertRuns(db, workspaceId, j.id, finals, events, now);
  const atFirstNode = () => insert(runs.map((run): Final => ({ run, status: "Active", dueAt: now })));
  if (j.failing) {
    await atFirstNode();
    return { started: runs.length, queued: false };
  }
  await db.query("SAVEPOINT entering");
  try {
    const ctx = await stepContext(db, deps, workspaceId, j.id, now);
    await record(ctx, deps, await decide(ctx, deps, j, runs), insert);
    await db.query("RELEASE SAVEPOINT entering");
    return { started: runs.length, queued: ctx.messages.length > 0 };
  } catch (err) {
    if (!isDefinitionFault(err)) throw err;
    await db.query("ROLLBACK TO SAVEPOINT entering");
    await atFirstNode();
    return { started: runs.length, queued: false };
  }
}

/** Inserts new runs where they went (`events`: the JSON text of a run's event, by run id). */
function insertRuns(db: pg.PoolClient, workspaceId: string, journeyId: string, finals: Final[], events: Map<string, string>, now: Date) {
  const at = param(now);
  return db.query(
    sql`INSERT INTO journey_runs (workspace_id, id, journey_id, version, user_id, node_id, waiting, wait_until, due_at, status, event, entered_at, updated_at, ended_at)
     SELECT ${workspaceId}, u.id, ${journeyId}, u.version, u.user_id, u.node_id, u.waiting, u.wait_until, u.due_at, u.status::"JourneyRunStatus", u.event,
       ${at}, ${at}, CASE WHEN u.status = 'Active' THEN NULL ELSE ${at}::timestamptz END
     FROM unnest(${finals.map((f) => f.run.id)}::uuid[], ${finals.map((f) => f.run.version)}::int[], ${finals.map((f) => f.run.userId)}::text[],
         ${finals.map((f) => f.run.nodeId)}::text[], ${finals.map((f) => f.run.waiting)}::bool[], ${finals.map((f) => f.run.waitUntil)}::timestamptz[],
         ${finals.map((f) => f.dueAt)}::timestamptz[], ${finals.map((f) => f.status)}::text[], ${finals.map((f) => events.get(f.run.id) ?? null)}::jsonb[])
       AS u(id, version, user_id, node_id, waiting, wait_until, due_at, status, event)`,
  );
}

/** Members entered per transaction when a journey starts: the first runs' messages go out while the rest enter. */
const MEMBER_CHUNK = 5000;

/** Serializes a workspace's entries (for "at most one run ever"); call inside the transaction. */
const lockEntries = (db: pg.PoolClient, workspaceId: string) =>
  db.query(sql`SELECT pg_advisory_xact_lock(${ENTRY_LOCK_SPACE}, hashtext(${workspaceId}))`);

/**
 * Starts runs for the current members of an EntryNode journey's segment (when it starts), a chunk
 * of members per transaction (each at `now()` when it begins), calling `entered` after each commit
 * that started runs; a member who has had a run since (entering meanwhile) is not started again.
 */
export async function enterMembers(
  db: pg.PoolClient,
  deps: AdvanceDeps,
  workspaceId: string,
  j: LiveJourney,
  now: () => Date,
  entered: () => Promise<unknown>,
) {
  const entry = j.definition.entryNode;
  if (entry.type !== "EntryNode") return;
  let after = "";
  for (;;) {
    const { rows } = await db.query<{ profile_id: string }>(
      sql`SELECT profile_id FROM segment_memberships WHERE workspace_id = ${workspaceId} AND segment_id = ${entry.segment} AND profile_id > ${after}
       ORDER BY profile_id ${limit(MEMBER_CHUNK)}`,
    );
    if (rows.length === 0) return;
    const { started, queued } = await inTransaction(db, async () => {
      await lockEntries(db, workspaceId);
      const entrants = rows.map((r) => ({ userId: r.profile_id, event: null }));
      return startRuns(db, deps, workspaceId, j, entrants, now(), true);
    });
    if (queued) await wakeJourneySenders(deps.sends, workspaceId, j.id);
    if (started > 0) await entered();
    after = rows[rows.length - 1]!.profile_id;
  }
}

/**
 * Takes one batch of the workspace's signals: wakes the waiting runs of the users who entered a
 * segment (a wait or the exit segment may be satisfied: the run looks again) and starts the runs
 * the signals cause in running journeys. Returns how many signals it took.
 */
export async function takeSignals(
  db: pg.PoolClient,
  deps: AdvanceDeps,
  workspaceId: string,
  running: (db: pg.PoolClient) => Promise<LiveJourney[]>,
  now: Date,
): Promise<number> {
  const { taken, queued } = await inTransaction(db, async () => {
    const ws = param(workspaceId);
    const { rows } = await db.query<{ segment_id: string | null; message_id: string | null; user_id: string }>(
      sql`DELETE FROM journey_signals WHERE workspace_id = ${ws} AND id IN (
         SELECT id FROM journey_signals WHERE workspace_id = ${ws} ORDER BY id ${limit(SIGNAL_BATCH)} FOR UPDATE SKIP LOCKED)
       RETURNING segment_id, message_id, user_id`,
    );
    if (rows.length === 0) return { taken: 0, queued: [] };
    // One taker per workspace at a time, so "at most one run ever" holds between two takers (what
    // decides who may start is read after it). Taken only with signals in hand: a pass that finds
    // none never waits for an entry under way (a journey's start enters its members in chunks).
    await lockEntries(db, workspaceId);
    // Read after the signals: a signal is only written for a journey already running, so every
    // journey a signal taken here is for is seen (one started since an earlier read included).
    const journeys = await running(db);
    const entered = rows.filter((r) => r.segment_id !== null);
    const tracked = rows.flatMap((r) => (r.message_id !== null ? [r.message_id] : []));
    // Before the starts: the runs started below were decided with what is committed now.
    const woken = [...new Set(entered.map((r) => r.user_id))];
    if (woken.length > 0) {
      const at = param(now);
      await db.query(
        sql`UPDATE journey_runs SET due_at = ${at} WHERE workspace_id = ${ws} AND status = 'Active' AND waiting AND due_at > ${at}
           AND user_id = ANY(${woken}::text[])`,
      );
    }
    const queued: string[] = [];
    for (const j of journeys) {
      const entry = j.definition.entryNode;
      let entrants: Entrant[] = [];
      if (entry.type === "EntryNode") {
        entrants = entered.filter((r) => r.segment_id === entry.segment).map((r) => ({ userId: r.user_id, event: null }));
      } else if (tracked.length > 0) {
        // The user's first such event of the batch starts the run; it is the run's `event`.
        const { rows: events } = await db.query<{ user_id: string; event: string }>(
          sql`SELECT DISTINCT ON (e.profile_id) e.profile_id AS user_id,
              jsonb_build_object('event', e.event, 'messageId', e.message_id, 'userId', e.user_id, 'anonymousId', e.anonymous_id,
                'properties', coalesce(e.payload -> 'properties', '{}'::jsonb), 'timestamp', e.event_time)::text AS event
            FROM events_resolved e WHERE e.workspace_id = ${ws} AND e.message_id = ANY(${tracked}::text[]) AND e.event = ${entry.event}
            ORDER BY e.profile_id, e.event_time, e.message_id`,
        );
        entrants = events.map((e) => ({ userId: e.user_id, event: e.event }));
      }
      if (entrants.length === 0) continue;
      if ((await startRuns(db, deps, workspaceId, j, entrants, now, !j.canRunMultiple)).queued) queued.push(j.id);
    }
    return { taken: rows.length, queued };
  });
  for (const journeyId of queued) await wakeJourneySenders(deps.sends, workspaceId, journeyId);
  return taken;
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
