// The common case in one statement: when a commit has no identity links and no group events,
// inserting the events and creating/updating their profiles is a single data-modifying CTE.
// A lone statement is its own transaction, so the commit costs one round trip instead of five.
//
// Profiles are folded here, before PostgreSQL has seen the events, so the statement holds only
// when its assumptions do, and otherwise fails as a whole, having stored nothing: a replayed
// messageId fails the plain INSERT (unique violation, 23505; its traits must not apply twice),
// and an id that is an alias of another profile fails the final check (TD001). The caller then
// stores the commit on the transactional path, which handles both.
import type pg from "pg";
import {
  eventsFromJson,
  eventsJson,
  insertEventsFrom,
  mergeTraitsOnConflict,
  mergeUniformProfileTraitsOnConflict,
  profileRows,
  profilesFromJson,
  profilesJson,
  uniqueSorted,
  type WorkspaceEvent,
} from "./store.ts";

/** Events that need the multi-statement path (identity links, groups). */
export function needsTransaction({ ev }: WorkspaceEvent): boolean {
  return ev.type === "alias" || ev.type === "group" || (ev.type === "identify" && ev.userId !== null && ev.anonymousId !== null);
}

const upsertProfiles = (where: string, onConflict: string) => `INSERT INTO profiles (workspace_id, profile_id, traits, trait_times, trait_time_max)
  SELECT workspace_id, profile_id, traits, trait_times, trait_time_max FROM p WHERE ${where}
  ${onConflict}
  WHERE EXCLUDED.trait_times <> '{}'::jsonb
  RETURNING 1`;

// $1 the events, $2 their profiles (JSON rows, see store.ts).
// Each profile is in exactly one of `uniform` and `mixed`. Rows are in key order within each;
// across the two, concurrent commits of other processes may lock in different orders, and the
// rare deadlock that follows is retried by the Ingestor (40P01).
const SQL = `
WITH ins AS (${insertEventsFrom(eventsFromJson("$1"), false)}),
p AS (SELECT * FROM ${profilesFromJson("$2")}),
uniform AS (${upsertProfiles("uniform", mergeUniformProfileTraitsOnConflict)}),
mixed AS (${upsertProfiles("NOT uniform", mergeTraitsOnConflict("profiles", "profile_id"))})
SELECT tidings_require(
  NOT EXISTS (SELECT 1 FROM p JOIN profile_aliases a ON a.workspace_id = p.workspace_id AND a.alias_id = p.profile_id),
  'commit needs the transactional path'
) AS ok`;

/**
 * Stores events that need no transaction; returns how many were new, or null, having stored
 * nothing, when the commit needs the transactional path (`storeEvents`).
 */
export async function storeEventsInOneStatement(pool: pg.Pool, rows: WorkspaceEvent[]): Promise<number | null> {
  const events = uniqueSorted(rows);
  const profiles = profileRows(events, (_ws, id) => id);
  try {
    // Named, so each connection parses and plans this large statement once.
    await pool.query({ name: "tidings-ingest-v4", text: SQL, values: [eventsJson(events), profilesJson(profiles)] });
    return events.length;
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === "TD001" || code === "23505") return null;
    throw err;
  }
}
