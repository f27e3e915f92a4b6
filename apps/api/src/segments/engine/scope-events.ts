// A drain's copy of the events its segments read. Evaluated one by one, each segment reading
// events looks up every event of every profile in its scope through the (workspace, identity,
// time) index: under heavy ingestion that is most of a drain's cost, paid once per segment for
// the same users. A drain with several such segments instead copies the events of its scope's
// profiles once, with the profile each belongs to, into a temporary table of the connection
// evaluating them, and each of those segments reads its users' rows of the copy (`copy` of
// compileSegment): one scan and one hash aggregate, no lookups. The scope's profiles are copied
// too, beside their events, so that each segment no longer looks its profiles up again. Of an
// event's payload, the copy keeps only what segments read: a track's properties, an identify's
// traits, so that a copy of most of a workspace stays in the session's buffers (measured over a
// copy of 583 000 events of 50 000 users: 93 MB, within the 128 MB the whole payloads outgrew; a
// count over it 33 ms instead of 267 ms, a LastPerformed 455 ms instead of 805 ms; taking the
// copy no slower).
//
// Segments whose every node reading events needs only each user's newest few (EventsRead.bounded:
// a LastPerformed, a count with no dated property) are not copied for: their lookups stop there,
// whatever the history, where a copy holds all of it (measured in bench (f): 3.9 s of database
// time in those segments' statements over 9 drains, against 6.3 s over copies, copies included).
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
 *
 * Tried and left (bench (c), (e), (f), interleaved with this grouping): one unit for every segment
 * reading events whatever the event's name (one pass over the events' pages instead of one per
 * name, which visit nearly the same pages) took no less CPU per drain in (f) (709–713 ms against
 * 680–713 ms) and half as long again, on one lane (607–616 ms against 417 ms); the longer passes
 * then each took in most of the workspace under (c), whose catch-up grew from 0.4–1.6 s to 1.1–3.6 s.
 * Splitting that unit's users between the two lanes, each with a copy of its share's events, cost
 * more CPU (the shares' copies still visit most pages each).
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
  // One bitmap of their events through the (workspace, identity, time) index, whose pages are then
  // read once each, in order, whatever the statistics say (no scan of the table or of the
  // workspace's events by time or name): under heavy ingestion the scope is most of the
  // workspace's users, and reading each identity's events one lookup at a time cost 1.6 times as
  // much (measured: 247 ms instead of 157 ms per copy of about 49 000 events). The profiles, in
  // the same transaction (one snapshot for both), by their primary key.
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
    // The copy has no statistics (ANALYZE would cost about what it saves): the planner takes each
    // filter on it to keep a row or so, and groups a segment's events by sorting them. Hashing is
    // linear (measured: a Performed count over the copy in half the time). Its users' results are
    // joined to their profiles by hash too: in a workspace newer than the statistics of
    // `profiles`, the scope's profiles also look like one row, and a nested loop then read the
    // copy's result once per profile (measured: 5.8 s for 2 820 users). Lookups that only a
    // nested loop can make (LATERAL, one id at a time) still are.
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
