// Every SQL statement ingestion runs, in one place. Row sets arrive as one JSON parameter each
// (rows.ts, `encodeRows`) and `rowsFrom` reads them back by column name, so the statements and
// the encoder share the column lists of rows.ts and nothing depends on positions.
import { OUTBOX_CHANNEL } from "../outbox/index.ts";
import {
  type ColumnType,
  EVENT_COLUMNS,
  GROUP_COLUMNS,
  IDENTITY_COLUMNS,
  MEMBERSHIP_COLUMNS,
  OUTBOX_COLUMNS,
  PROFILE_COLUMNS,
} from "./rows.ts";

/** Row i's value of column `column` (a JSON array), as its SQL type. */
const read: Record<ColumnType, (column: string) => string> = {
  text: (c) => `${c} ->> i`,
  jsonb: (c) => `${c} -> i`,
  uuid: (c) => `(${c} ->> i)::uuid`,
  int8: (c) => `(${c} ->> i)::int8`,
  bool: (c) => `(${c} ->> i)::bool`,
  epoch_ms: (c) => `('epoch'::timestamptz + (${c} ->> i)::int8 * interval '1 millisecond')`,
};

/**
 * The row set sent as `param` (`encodeRows(columns, …)`) as a table `alias` whose columns have
 * the list's names and types: jsonb_to_record takes each column's array by name, and row i is
 * element i of each. (Measured against other ways of reading by name: one set-returning
 * function per column (ROWS FROM) costs ~90 µs more per statement, an object per row
 * (jsonb_to_recordset) 3–5 µs more per event. This one costs per event what positional arrays
 * did, and ~10–15 µs more per statement.)
 */
function rowsFrom(columns: Record<string, { type: ColumnType }>, param: string, alias: string): string {
  const names = Object.keys(columns);
  return `(SELECT ${names.map((n) => `${read[columns[n]!.type](`c.${n}`)} AS ${n}`).join(", ")}
    FROM jsonb_to_record(${param}::jsonb) AS c(${names.map((n) => `${n} jsonb`).join(", ")}),
    generate_series(0, jsonb_array_length(c.${names[0]}) - 1) AS i) AS ${alias}`;
}

const names = (columns: object) => Object.keys(columns).join(", ");

// ---------------------------------------------------------------------------------------
// Events

const insertEvents = `INSERT INTO events (${names(EVENT_COLUMNS)})
  SELECT ${names(EVENT_COLUMNS)} FROM ${rowsFrom(EVENT_COLUMNS, "$1", "input")}`;

/** $1 event rows. Skips messageIds the workspace already has; returns the rows inserted. */
export const INSERT_NEW_EVENTS = `${insertEvents}
  ON CONFLICT (workspace_id, message_id) DO NOTHING
  RETURNING workspace_id, message_id`;

// ---------------------------------------------------------------------------------------
// Profiles and groups: traits merge per key, the latest event time winning

const mergedTraits = (table: string) =>
  `tidings_merge_traits(${table}.traits, ${table}.trait_times, EXCLUDED.traits, EXCLUDED.trait_times)`;
const mergedTimes = (table: string) => `tidings_merge_trait_times(${table}.trait_times, EXCLUDED.trait_times)`;

/** ON CONFLICT clause setting traits and trait_times; profiles also keep trait_time_max current. */
const onConflictSet = (table: "profiles" | "groups", keyColumn: "profile_id" | "group_id", traits: string, times: string) => `
  ON CONFLICT (workspace_id, ${keyColumn}) DO UPDATE SET
    traits = ${traits},
    trait_times = ${times},${table === "profiles" ? "\n    trait_time_max = GREATEST(profiles.trait_time_max, EXCLUDED.trait_time_max)," : ""}
    updated_at = now()`;

/** ON CONFLICT clause merging EXCLUDED's traits into `table`'s row per key, latest time wins. */
const mergeTraitsOnConflict = (table: "profiles" | "groups", keyColumn: "profile_id" | "group_id") =>
  onConflictSet(table, keyColumn, mergedTraits(table), mergedTimes(table));

const newerThanProfile = "profiles.trait_time_max <= EXCLUDED.trait_time_max";

/**
 * The same merge for profile rows whose traits all carry one time (trait_time_max), as a single
 * identify's do: when that time is at least the profile's newest trait time, every key it
 * carries wins, so jsonb concatenation does the merge without the per-key functions.
 */
const mergeUniformProfileTraitsOnConflict = onConflictSet(
  "profiles",
  "profile_id",
  `CASE WHEN ${newerThanProfile} THEN profiles.traits || EXCLUDED.traits ELSE ${mergedTraits("profiles")} END`,
  `CASE WHEN ${newerThanProfile} THEN profiles.trait_times || EXCLUDED.trait_times ELSE ${mergedTimes("profiles")} END`,
);

/** The columns of `profiles` a profile row sets (`uniform` only chooses the merge). */
const PROFILES = "workspace_id, profile_id, traits, trait_times, trait_time_max";

/** Creates profiles and merges traits; a row without traits only creates a missing profile. */
const upsertProfilesFrom = (source: string, onConflict: string) => `INSERT INTO profiles (${PROFILES})
  SELECT ${PROFILES} FROM ${source}${onConflict}
  WHERE EXCLUDED.trait_times <> '{}'::jsonb`;

/** $1 profile rows (already resolved to canonical profiles). */
export const UPSERT_PROFILES = upsertProfilesFrom(rowsFrom(PROFILE_COLUMNS, "$1", "p"), mergeTraitsOnConflict("profiles", "profile_id"));

/** $1 group rows. */
export const UPSERT_GROUPS = `INSERT INTO groups (${names(GROUP_COLUMNS)})
  SELECT ${names(GROUP_COLUMNS)} FROM ${rowsFrom(GROUP_COLUMNS, "$1", "g")}
  ${mergeTraitsOnConflict("groups", "group_id")}`;

/** $1 membership rows; a membership keeps its earliest join time. */
export const UPSERT_MEMBERSHIPS = `INSERT INTO group_memberships (${names(MEMBERSHIP_COLUMNS)})
  SELECT ${names(MEMBERSHIP_COLUMNS)} FROM ${rowsFrom(MEMBERSHIP_COLUMNS, "$1", "m")}
  ON CONFLICT (workspace_id, profile_id, group_id) DO UPDATE SET joined_at = LEAST(group_memberships.joined_at, EXCLUDED.joined_at)`;

// ---------------------------------------------------------------------------------------
// The change outbox (src/outbox): what changed, in the commit that changed it

const insertOutbox = (param: string) => `INSERT INTO segment_outbox (workspace_id, ids, keys, track_ids)
  SELECT o.workspace_id, ARRAY(SELECT jsonb_array_elements_text(o.ids)), ARRAY(SELECT jsonb_array_elements_text(o.keys)),
    ARRAY(SELECT jsonb_array_elements_text(o.track_ids))
  FROM ${rowsFrom(OUTBOX_COLUMNS, param, "o")}
  WHERE tidings_outbox_needed(o.workspace_id, ARRAY(SELECT jsonb_array_elements_text(o.keys)))
  RETURNING workspace_id`;

/**
 * Wakes the engine for the workspaces of `ob` (the rows just appended) whose outbox held nothing
 * when the statement began: while rows are pending, the engine is awake or woken by the commit
 * that found the outbox empty, and a refresh drains until it is empty (src/outbox). At most one
 * NOTIFY per workspace per drain, however many commits: commits that notify are serialized by
 * PostgreSQL. (The rows `ob` appends are not visible to this statement.)
 */
const notifyIdle = (ob: string) => `SELECT pg_notify('${OUTBOX_CHANNEL}', w::text) FROM (SELECT DISTINCT workspace_id AS w FROM ${ob}) n
  WHERE NOT EXISTS (SELECT 1 FROM segment_outbox p WHERE p.workspace_id = n.w)`;

/** $1 outbox rows: appends those something depends on (src/outbox) and wakes the engine if it was idle. */
export const INSERT_OUTBOX = `WITH ob AS (${insertOutbox("$1")})
  ${notifyIdle("ob")}`;

// ---------------------------------------------------------------------------------------
// Identity links

/** $1 identity rows: the current alias → profile links of those ids. */
export const SELECT_ALIASES = `SELECT a.workspace_id, a.alias_id, a.profile_id
  FROM profile_aliases a JOIN ${rowsFrom(IDENTITY_COLUMNS, "$1", "ids")} ON a.workspace_id = ids.workspace_id AND a.alias_id = ids.alias_id`;

// The four statements linking $2 (an anonymousId or previous id) to the profile $3 in workspace $1.

/** Records the link; no row when $2 is already linked (the first link wins). */
export const INSERT_ALIAS = `INSERT INTO profile_aliases (workspace_id, alias_id, profile_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`;

/** Ids linked to $2 now belong to $3, so every alias points at a canonical profile. */
export const REPOINT_ALIASES = `UPDATE profile_aliases SET profile_id = $3 WHERE workspace_id = $1 AND profile_id = $2`;

/** $2's profile merges into $3's (traits per key, latest time wins; the earliest creation time). */
export const MOVE_PROFILE = `WITH gone AS (DELETE FROM profiles WHERE workspace_id = $1 AND profile_id = $2 RETURNING traits, trait_times, trait_time_max, created_at)
  INSERT INTO profiles (workspace_id, profile_id, traits, trait_times, trait_time_max, created_at)
  SELECT $1, $3, traits, trait_times, trait_time_max, created_at FROM gone
  ${mergeTraitsOnConflict("profiles", "profile_id")},
    created_at = LEAST(profiles.created_at, EXCLUDED.created_at)`;

/** $2's group memberships move to $3. */
export const MOVE_MEMBERSHIPS = `WITH gone AS (DELETE FROM group_memberships WHERE workspace_id = $1 AND profile_id = $2 RETURNING group_id, joined_at)
  INSERT INTO group_memberships (workspace_id, profile_id, group_id, joined_at)
  SELECT $1, $3, group_id, joined_at FROM gone ON CONFLICT DO NOTHING`;

// ---------------------------------------------------------------------------------------
// The fast path's single statement

/**
 * $1 event rows, $2 profile rows (ids as sent), $3 outbox rows. Inserts the events with a plain INSERT (a stored
 * messageId fails it: 23505) and creates/updates their profiles; fails as a whole with TD001
 * when one of the ids is an alias of another profile. Each profile is in exactly one of
 * `uniform` and `mixed`, in key order within each; across the two, concurrent commits of
 * other processes may lock in different orders, and the rare deadlock is retried (40P01).
 */
export const STORE_IN_ONE_STATEMENT = `
WITH ins AS (${insertEvents}),
p AS (SELECT * FROM ${rowsFrom(PROFILE_COLUMNS, "$2", "p")}),
uniform AS (${upsertProfilesFrom("p WHERE uniform", mergeUniformProfileTraitsOnConflict)}
  RETURNING 1),
mixed AS (${upsertProfilesFrom("p WHERE NOT uniform", mergeTraitsOnConflict("profiles", "profile_id"))}
  RETURNING 1),
ob AS (${insertOutbox("$3")}),
notified AS (${notifyIdle("ob")})
SELECT (SELECT count(*) FROM notified) AS notified, tidings_require(
  NOT EXISTS (SELECT 1 FROM p JOIN profile_aliases a ON a.workspace_id = p.workspace_id AND a.alias_id = p.profile_id),
  'commit needs the transactional path'
) AS ok`;
