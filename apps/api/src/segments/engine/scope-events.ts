// A drain's copy of the events its segments read: a drain with several segments reading the same
// events copies its scope's profiles and their events once, with the profile each belongs to,
// into temporary tables of the connection evaluating them, and each segment reads its users' rows
// of the copy (`copy` of compileSegment) instead of looking every event up again. The copy keeps
// only what segments read of a payload, so that it stays in the session's buffers. Segments
// needing only each user's newest events (EventsRead.bounded) are not copied for: their lookups
// stop there, whatever the history. Why, with figures: docs/scaling.md, "Measurements behind the code".
//
// The copy is taken after the drained outbox rows were read, so it holds every event and profile
// they stand for; a change committed later is in the next drain, whose segments are evaluated again.
import type { SegmentDefinition } from "@tidings/schema";
import type pg from "pg";
import { raw, sql } from "../../db/sql.ts";
import { inTransaction } from "../../db/transaction.ts";
import { newestNeeded, type ScopeCopy } from "./compile-nodes.ts";
import { nodesById } from "./compile.ts";

/** The events a definition reads: track events by name, and identifies (a Trait node with HasBeen). */
export interface EventsRead {
  names: string[];
  identifies: boolean;
  /**
   * Each of its nodes reading events needs only each user's newest few (newestNeeded): its
   * users' events are looked up, newest first, never copied.
   */
  bounded: boolean;
}

/** What `def` reads of the events table; null when nothing. */
export function eventsRead(def: SegmentDefinition): EventsRead | null {
  const names = new Set<string>();
  let identifies = false;
  let bounded = true;
  for (const n of nodesById(def).values()) {
    if (n.type === "Performed" || n.type === "LastPerformed") {
      names.add(n.event);
      if (newestNeeded(n) === null) bounded = false;
    } else if (n.type === "Trait" && n.operator.type === "HasBeen") identifies = true;
  }
  return names.size > 0 || identifies ? { names: [...names].sort(), identifies, bounded: bounded && !identifies } : null;
}

/**
 * A drain's evaluations in the order they are taken (`ids`: the users each is evaluated for):
 * every segment on its own, except segments reading the same events for many users, when several
 * do: those are one unit, evaluated over one copy. A segment reading only each user's newest few
 * events (EventsRead.bounded) stays on its own: its lookups do not grow with its users' history,
 * where a copy holds all of it. A segment evaluated for fewer than a quarter of
 * the users of the largest one reading the same events stays on its own: looking its few users'
 * events up costs less than reading the copy. Single evaluations first (the short ones first: a
 * change reaches most segments without waiting for the long units), then the units, most segments
 * first (the lanes finish together). A drain groups its segments this way twice: by their scopes
 * before narrowing (scope.ts), each group taken by one lane, then each group again once narrowed.
 * Other groupings tried and left: docs/scaling.md, "Measurements behind the code".
 */
export function evaluationUnits<T extends { reads: EventsRead | null; ids: string[] }>(work: T[]): T[][] {
  const byReads = new Map<string, T[]>();
  for (const w of work) {
    if (w.reads === null || w.reads.bounded) continue;
    const key = JSON.stringify(w.reads);
    byReads.set(key, [...(byReads.get(key) ?? []), w]);
  }
  const copied = [...byReads.values()]
    .map((same) => {
      const largest = Math.max(...same.map((w) => w.ids.length));
      return same.filter((w) => w.ids.length * 4 >= largest);
    })
    .filter((unit) => unit.length > 1)
    .sort((a, b) => b.length - a.length);
  const shared = new Set(copied.flat());
  return [...work.filter((w) => !shared.has(w)).map((w) => [w]), ...copied];
}

/** Segments reading the same events evaluated together (one of evaluationUnits): alone, or over one copy of their users' events. */
export async function evaluateUnit<T extends { reads: EventsRead | null; ids: string[] }>(
  lane: pg.PoolClient,
  workspaceId: string,
  unit: T[],
  evaluate: (lane: pg.PoolClient, w: T, copy?: ScopeCopy) => Promise<void>,
): Promise<void> {
  if (unit.length === 1) return evaluate(lane, unit[0]!);
  const ids = [...new Set(unit.flatMap((w) => w.ids))];
  const reads = unit.flatMap((w) => w.reads ?? []);
  await withScopeCopy(lane, workspaceId, ids, reads, async (copy) => {
    // A segment evaluated for every profile of the copy reads all of it.
    for (const w of unit) await evaluate(lane, w, { ...copy, exact: w.ids.length === ids.length });
  });
}

/** Sets the session's buffers for temporary tables, the copy's (once per session: never changed back). */
const SET_TEMP_BUFFERS = "SET temp_buffers = '128MB'";

/** The copy's tables, in the session's own schema of temporary tables. */
const COPY = { events: raw("pg_temp.tidings_scope_events"), profiles: raw("pg_temp.tidings_scope_profiles") };

/**
 * Runs `fn` with a copy, on `db`'s session, of the profiles `ids` and of their events (their own
 * and their aliases') that any of `reads` reads, each with the profile it belongs to; `fn` gets
 * the tables to read instead of `profiles` and `events`. The copy, and the session's settings for
 * reading it (a larger work_mem, hashing rather than sorting), end with `fn`.
 */
export async function withScopeCopy<T>(
  db: pg.PoolClient,
  workspaceId: string,
  ids: string[],
  reads: EventsRead[],
  fn: (copy: Omit<ScopeCopy, "exact">) => Promise<T>,
): Promise<T> {
  const names = [...new Set(reads.flatMap((r) => r.names))];
  const identifies = reads.some((r) => r.identifies);
  // Temporary tables live in the session's own buffers (8 MB by default, then files): a size
  // can be set only before the session's first temporary table, and is kept for its life.
  await db.query(SET_TEMP_BUFFERS);
  // The identities of the profiles `ids`: their own ids, and their aliases (each event goes to the
  // profile its identity belongs to).
  const { rows: aliases } = await db.query<{ alias_id: string; profile_id: string }>(
    sql`SELECT alias_id, profile_id FROM profile_aliases WHERE workspace_id = ${workspaceId} AND profile_id = ANY(${ids}::text[])`,
  );
  const identities = [...ids, ...aliases.map((a) => a.alias_id)];
  // One bitmap of their events through the (workspace, identity, time) index, each page read once,
  // whatever the statistics say (one lookup per identity costs more: docs/scaling.md). The
  // profiles in the same transaction (one snapshot for both), by their primary key.
  await inTransaction(db, async () => {
    await db.query("SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off");
    await db.query(sql`CREATE TEMPORARY TABLE ${COPY.profiles} AS
      SELECT profile_id, traits FROM profiles WHERE workspace_id = ${workspaceId} AND profile_id = ANY(${ids}::text[])`);
    await db.query(sql`CREATE TEMPORARY TABLE ${COPY.events} AS
      SELECT coalesce(m.profile_id, e.identity_id) AS profile_id, e.type, e.event, e.event_time, e.message_id,
        CASE WHEN e.type = 'track' THEN e.payload -> 'properties' END AS properties,
        CASE WHEN e.type = 'identify' THEN e.payload -> 'traits' END AS traits
      FROM (SELECT e.identity_id, e.type, e.event, e.event_time, e.message_id, e.payload FROM events e
            WHERE e.workspace_id = ${workspaceId} AND e.identity_id = ANY(${identities}::text[]) OFFSET 0) e
      LEFT JOIN unnest(${aliases.map((a) => a.alias_id)}::text[], ${aliases.map((a) => a.profile_id)}::text[]) m (alias_id, profile_id)
        ON m.alias_id = e.identity_id
      WHERE (e.type = 'track' AND e.event = ANY(${names}::text[])) OR (${identifies}::boolean AND e.type = 'identify')`);
  });
  const drop = async () => {
    await db.query(sql`DROP TABLE ${COPY.events}, ${COPY.profiles}`);
    await db.query("RESET work_mem; RESET enable_sort; RESET enable_nestloop");
  };
  let value: T;
  try {
    // The copy has no statistics (ANALYZE would cost about what it saves), so the planner would
    // sort it and join it by nested loop: hashing is linear (docs/scaling.md). Lookups that only
    // a nested loop can make (LATERAL, one id at a time) still are.
    await db.query("SET work_mem = '64MB'; SET enable_sort = off; SET enable_nestloop = off");
    value = await fn(COPY);
  } catch (err) {
    // fn's error is the one thrown (a copy that cannot be dropped means a broken connection).
    await drop().catch(() => {});
    throw err;
  }
  await drop();
  return value;
}
