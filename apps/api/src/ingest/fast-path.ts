// The common case in one statement: when a commit has no identity links and no group events,
// inserting the events and creating/updating their profiles is a single data-modifying CTE.
// A lone statement is its own transaction, so the commit costs one round trip instead of five.
import type pg from "pg";
import { EVENT_COLUMNS_SQL, eventColumns, insertEventsFrom, mergeTraitsOnConflict, uniqueSorted, type WorkspaceEvent } from "./store.ts";

/** Events that need the multi-statement path (identity links, groups). */
export function needsTransaction({ ev }: WorkspaceEvent): boolean {
  return ev.type === "alias" || ev.type === "group" || (ev.type === "identify" && ev.userId !== null && ev.anonymousId !== null);
}

// Only events that were really inserted (`ins`) touch profiles, so replays change nothing.
// Traits fold per key: the latest event time wins, then the later event of the commit
// (same rule as tidings_merge_traits). Profiles are written in key order against deadlocks.
const SQL = `
WITH input AS (SELECT * FROM ${EVENT_COLUMNS_SQL}),
ins AS (${insertEventsFrom("input")}),
fresh AS (
  SELECT i.workspace_id, COALESCE(a.profile_id, i.profile_id) AS pid, i.type, i.payload, i.event_time, i.ord
  FROM input i
  JOIN ins USING (workspace_id, message_id)
  LEFT JOIN profile_aliases a ON a.workspace_id = i.workspace_id AND a.alias_id = i.profile_id
),
latest AS (
  SELECT DISTINCT ON (f.workspace_id, f.pid, t.key) f.workspace_id, f.pid, t.key, t.value,
         (extract(epoch FROM f.event_time) * 1000)::bigint AS ms
  FROM fresh f, jsonb_each(f.payload -> 'traits') t
  WHERE f.type = 'identify' AND jsonb_typeof(f.payload -> 'traits') = 'object'
  ORDER BY f.workspace_id, f.pid, t.key, f.event_time DESC, f.ord DESC
),
traits AS (
  SELECT workspace_id, pid, jsonb_object_agg(key, value) AS traits, jsonb_object_agg(key, ms) AS times
  FROM latest GROUP BY workspace_id, pid
),
profiles_in AS (
  SELECT p.workspace_id, p.pid, COALESCE(t.traits, '{}'::jsonb) AS traits, COALESCE(t.times, '{}'::jsonb) AS times
  FROM (SELECT DISTINCT workspace_id, pid FROM fresh) p
  LEFT JOIN traits t USING (workspace_id, pid)
  ORDER BY p.workspace_id, p.pid
),
upserted AS (
  INSERT INTO profiles (workspace_id, profile_id, traits, trait_times)
  SELECT workspace_id, pid, traits, times FROM profiles_in
  ${mergeTraitsOnConflict("profiles", "profile_id")}
  WHERE EXCLUDED.trait_times <> '{}'::jsonb
  RETURNING 1
)
SELECT (SELECT count(*) FROM ins)::int AS stored`;

/** Stores events that need no transaction; returns how many were new. */
export async function storeEventsInOneStatement(pool: pg.Pool, rows: WorkspaceEvent[]): Promise<number> {
  // Named, so each connection parses and plans this large statement once.
  const { rows: result } = await pool.query<{ stored: number }>({ name: "tidings-ingest-v1", text: SQL, values: eventColumns(uniqueSorted(rows)) });
  return result[0]?.stored ?? 0;
}
