// Every SQL statement ingestion runs, in one place. Row sets arrive as one JSON parameter each
// (rows.ts, `encodeRows`) and `rowsFrom` reads them back by column name, so the statements and
// the encoder share the column lists of rows.ts and nothing depends on positions.
import { empty, ident, join, param, raw, type Sql, sql } from "../db/sql.ts";
import { appendChanges, appendRows, notifyIdle } from "../outbox/index.ts";
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
const read: Record<ColumnType, (column: Sql) => Sql> = {
  text: (c) => sql`${c} ->> i`,
  jsonb: (c) => sql`${c} -> i`,
  uuid: (c) => sql`(${c} ->> i)::uuid`,
  int8: (c) => sql`(${c} ->> i)::int8`,
  bool: (c) => sql`(${c} ->> i)::bool`,
  epoch_ms: (c) => sql`('epoch'::timestamptz + (${c} ->> i)::int8 * interval '1 millisecond')`,
};

/**
 * A fragment without parameters as one piece of text, rendered once: the statements are built
 * for every commit, and the column lists below would otherwise be walked piece by piece each time.
 */
function fixed(fragment: Sql): Sql {
  if (fragment.values.length > 0) throw new Error("a fixed fragment takes no parameters");
  return raw(fragment.text);
}

/**
 * The row set `rows` (`encodeRows(columns, …)`, sent as one parameter) as a table `alias` whose
 * columns have the list's names and types: jsonb_to_record takes each column's array by name,
 * and row i is element i of each (the cheapest way of reading by name: docs/scaling.md). The
 * fragment's text is built once per column list.
 */
function rowsFrom(columns: Record<string, { type: ColumnType }>, alias: string): (rows: string) => Sql {
  const names = Object.keys(columns);
  const selected = fixed(
    join(
      names.map((n) => sql`${read[columns[n]!.type](sql`c.${ident(n)}`)} AS ${ident(n)}`),
      ", ",
    ),
  );
  const record = fixed(
    join(
      names.map((n) => sql`${ident(n)} jsonb`),
      ", ",
    ),
  );
  const first = ident(names[0]!);
  const as = ident(alias);
  return (rows) => sql`(SELECT ${selected}
    FROM jsonb_to_record(${rows}::jsonb) AS c(${record}),
    generate_series(0, jsonb_array_length(c.${first}) - 1) AS i) AS ${as}`;
}

const names = (columns: object) => fixed(join(Object.keys(columns).map(ident), ", "));

// ---------------------------------------------------------------------------------------
// Events

const EVENT_NAMES = names(EVENT_COLUMNS);
const eventRows = rowsFrom(EVENT_COLUMNS, "input");
const insertEvents = (events: string) => sql`INSERT INTO events (${EVENT_NAMES})
  SELECT ${EVENT_NAMES} FROM ${eventRows(events)}`;

/** Inserts the event rows `events`, skipping messageIds the workspace already has; returns the rows inserted. */
export const insertNewEvents = (events: string) => sql`${insertEvents(events)}
  ON CONFLICT (workspace_id, message_id) DO NOTHING
  RETURNING workspace_id, message_id`;

// ---------------------------------------------------------------------------------------
// Profiles and groups: traits merge per key, the latest event time winning

type Table = "profiles" | "groups";
const mergedTraits = (table: Table) =>
  sql`tidings_merge_traits(${ident(table)}.traits, ${ident(table)}.trait_times, EXCLUDED.traits, EXCLUDED.trait_times)`;
const mergedTimes = (table: Table) => sql`tidings_merge_trait_times(${ident(table)}.trait_times, EXCLUDED.trait_times)`;

/** ON CONFLICT clause setting traits and trait_times; profiles also keep trait_time_max current. */
const onConflictSet = (table: Table, keyColumn: "profile_id" | "group_id", traits: Sql, times: Sql) => sql`
  ON CONFLICT (workspace_id, ${ident(keyColumn)}) DO UPDATE SET
    traits = ${traits},
    trait_times = ${times},${table === "profiles" ? sql`\n    trait_time_max = GREATEST(profiles.trait_time_max, EXCLUDED.trait_time_max),` : empty}
    updated_at = now()`;

/** ON CONFLICT clause merging EXCLUDED's traits into `table`'s row per key, latest time wins. */
const mergeTraitsOnConflict = (table: Table, keyColumn: "profile_id" | "group_id") =>
  fixed(onConflictSet(table, keyColumn, mergedTraits(table), mergedTimes(table)));

const newerThanProfile = sql`profiles.trait_time_max <= EXCLUDED.trait_time_max`;

/**
 * The same merge for profile rows whose traits all carry one time (trait_time_max), as a single
 * identify's do: when that time is at least the profile's newest trait time, every key it
 * carries wins, so jsonb concatenation does the merge without the per-key functions.
 */
const mergeUniformProfileTraitsOnConflict = fixed(
  onConflictSet(
    "profiles",
    "profile_id",
    sql`CASE WHEN ${newerThanProfile} THEN profiles.traits || EXCLUDED.traits ELSE ${mergedTraits("profiles")} END`,
    sql`CASE WHEN ${newerThanProfile} THEN profiles.trait_times || EXCLUDED.trait_times ELSE ${mergedTimes("profiles")} END`,
  ),
);

/** The columns of `profiles` a profile row sets (`uniform` only chooses the merge). */
const PROFILES = raw("workspace_id, profile_id, traits, trait_times, trait_time_max");

/** Creates profiles and merges traits; a row without traits only creates a missing profile. */
const upsertProfilesFrom = (source: Sql, onConflict: Sql) => sql`INSERT INTO profiles (${PROFILES})
  SELECT ${PROFILES} FROM ${source}${onConflict}
  WHERE EXCLUDED.trait_times <> '{}'::jsonb`;

const profileRows = rowsFrom(PROFILE_COLUMNS, "p");
const mergeProfileTraits = mergeTraitsOnConflict("profiles", "profile_id");

/** Upserts the profile rows `profiles` (already resolved to canonical profiles). */
export const upsertProfiles = (profiles: string) => upsertProfilesFrom(profileRows(profiles), mergeProfileTraits);

const GROUP_NAMES = names(GROUP_COLUMNS);
const groupRows = rowsFrom(GROUP_COLUMNS, "g");
const mergeGroupTraits = mergeTraitsOnConflict("groups", "group_id");

/** Upserts the group rows `groups`. */
export const upsertGroups = (groups: string) => sql`INSERT INTO groups (${GROUP_NAMES})
  SELECT ${GROUP_NAMES} FROM ${groupRows(groups)}
  ${mergeGroupTraits}`;

const MEMBERSHIP_NAMES = names(MEMBERSHIP_COLUMNS);
const membershipRows = rowsFrom(MEMBERSHIP_COLUMNS, "m");

/** Upserts the membership rows `memberships`; a membership keeps its earliest join time. */
export const upsertMemberships = (memberships: string) => sql`INSERT INTO group_memberships (${MEMBERSHIP_NAMES})
  SELECT ${MEMBERSHIP_NAMES} FROM ${membershipRows(memberships)}
  ON CONFLICT (workspace_id, profile_id, group_id) DO UPDATE SET joined_at = LEAST(group_memberships.joined_at, EXCLUDED.joined_at)`;

// ---------------------------------------------------------------------------------------
// The change outbox (src/outbox): what changed, in the commit that changed it

const outboxRowsFrom = rowsFrom(OUTBOX_COLUMNS, "o");

/** Appends the outbox rows `outbox` something depends on (src/outbox) and wakes the engine if it was idle. */
export const insertOutboxRows = (outbox: string) => appendChanges(outboxRowsFrom(outbox));

// ---------------------------------------------------------------------------------------
// Identity links

const identityRows = rowsFrom(IDENTITY_COLUMNS, "ids");

/** The current alias → profile links of the identity rows `identities`. */
export const selectAliases = (identities: string) => sql`SELECT a.workspace_id, a.alias_id, a.profile_id
  FROM profile_aliases a JOIN ${identityRows(identities)} ON a.workspace_id = ids.workspace_id AND a.alias_id = ids.alias_id`;

/** A link of `source` (an anonymousId or previous id) to the profile `target` in workspace `workspaceId`. */
export interface IdentityLink {
  workspaceId: string;
  source: string;
  target: string;
}

// The four statements of a link.

/** Records the link; no row when `source` is already linked (the first link wins). */
export const insertAlias = ({ workspaceId, source, target }: IdentityLink) =>
  sql`INSERT INTO profile_aliases (workspace_id, alias_id, profile_id) VALUES (${workspaceId}, ${source}, ${target}) ON CONFLICT DO NOTHING`;

/** Ids linked to `source` now belong to `target`, so every alias points at a canonical profile. */
export const repointAliases = ({ workspaceId, source, target }: IdentityLink) =>
  sql`UPDATE profile_aliases SET profile_id = ${target} WHERE workspace_id = ${workspaceId} AND profile_id = ${source}`;

const mergeMovedProfile = fixed(sql`${mergeProfileTraits},
    created_at = LEAST(profiles.created_at, EXCLUDED.created_at)`);

/** `source`'s profile merges into `target`'s (traits per key, latest time wins; the earliest creation time). */
export function moveProfile({ workspaceId, source, target }: IdentityLink): Sql {
  const ws = param(workspaceId);
  return sql`WITH gone AS (DELETE FROM profiles WHERE workspace_id = ${ws} AND profile_id = ${source} RETURNING traits, trait_times, trait_time_max, created_at)
  INSERT INTO profiles (workspace_id, profile_id, traits, trait_times, trait_time_max, created_at)
  SELECT ${ws}, ${target}, traits, trait_times, trait_time_max, created_at FROM gone
  ${mergeMovedProfile}`;
}

/** `source`'s group memberships move to `target`. */
export function moveMemberships({ workspaceId, source, target }: IdentityLink): Sql {
  const ws = param(workspaceId);
  return sql`WITH gone AS (DELETE FROM group_memberships WHERE workspace_id = ${ws} AND profile_id = ${source} RETURNING group_id, joined_at)
  INSERT INTO group_memberships (workspace_id, profile_id, group_id, joined_at)
  SELECT ${ws}, ${target}, group_id, joined_at FROM gone ON CONFLICT DO NOTHING`;
}

// ---------------------------------------------------------------------------------------
// The fast path's single statement

const mergeUniformProfiles = upsertProfilesFrom(raw("p WHERE uniform"), mergeUniformProfileTraitsOnConflict);
const mergeMixedProfiles = upsertProfilesFrom(raw("p WHERE NOT uniform"), mergeProfileTraits);

/**
 * Stores the event rows `events`, the profile rows `profiles` (ids as sent) and the outbox rows
 * `outbox`. Inserts the events with a plain INSERT (a stored
 * messageId fails it: 23505) and creates/updates their profiles; fails as a whole with TD001
 * when one of the ids is an alias of another profile. Each profile is in exactly one of
 * `uniform` and `mixed`, in key order within each; across the two, concurrent commits of
 * other processes may lock in different orders, and the rare deadlock is retried (40P01).
 */
export const fastPathStatement = (events: string, profiles: string, outbox: string) => sql`
WITH ins AS (${insertEvents(events)}),
p AS (SELECT * FROM ${profileRows(profiles)}),
uniform AS (${mergeUniformProfiles}
  RETURNING 1),
mixed AS (${mergeMixedProfiles}
  RETURNING 1),
ob AS (${appendRows(outboxRowsFrom(outbox))}),
notified AS (${notifyIdle(raw("ob"))})
SELECT (SELECT count(*) FROM notified) AS notified, tidings_require(
  NOT EXISTS (SELECT 1 FROM p JOIN profile_aliases a ON a.workspace_id = p.workspace_id AND a.alias_id = p.profile_id),
  'commit needs the transactional path'
) AS ok`;
