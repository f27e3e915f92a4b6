// The ingestion transaction (raw SQL: this is the hot path). Inserts events, skipping
// messageIds the workspace already has, then applies only the new events' effects: identity
// links, profile traits (per key, latest event time wins) and group membership.
import type pg from "pg";
import type { NormalizedEvent } from "./normalize.ts";

export interface WorkspaceEvent {
  workspaceId: string;
  ev: NormalizedEvent;
}

export const key = (workspaceId: string, id: string) => `${workspaceId}\u0000${id}`;

/** One row per (workspace, messageId), sorted so concurrent commits lock in the same order. */
export function uniqueSorted(rows: WorkspaceEvent[]): WorkspaceEvent[] {
  const unique = new Map<string, WorkspaceEvent>();
  for (const r of rows) {
    const k = key(r.workspaceId, r.ev.messageId);
    if (!unique.has(k)) unique.set(k, r);
  }
  return [...unique.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, r]) => r);
}

/** The events as the ten column arrays `EVENT_COLUMNS_SQL` unnests. */
export function eventColumns(rows: WorkspaceEvent[]): unknown[][] {
  const cols: unknown[][] = Array.from({ length: 10 }, () => []);
  for (const { workspaceId, ev } of rows) {
    // Times as ISO text: cheaper for the driver than formatting Date objects.
    const values = [workspaceId, ev.messageId, ev.type, ev.profileId, ev.userId, ev.anonymousId, ev.event, ev.eventTime.toISOString(), ev.receivedAt.toISOString(), ev.payloadJson];
    values.forEach((v, i) => cols[i]!.push(v));
  }
  return cols;
}

export const EVENT_COLUMNS_SQL = `unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::timestamptz[], $9::timestamptz[], $10::jsonb[])
  WITH ORDINALITY AS input(workspace_id, message_id, type, profile_id, user_id, anonymous_id, event, event_time, received_at, payload, ord)`;

/** Inserts the rows of `source` (shaped like EVENT_COLUMNS_SQL), skipping stored messageIds. */
export const insertEventsFrom = (source: string) => `INSERT INTO events (workspace_id, message_id, type, profile_id, user_id, anonymous_id, event, event_time, received_at, payload)
  SELECT workspace_id, message_id, type, profile_id, user_id, anonymous_id, event, event_time, received_at, payload FROM ${source}
  ON CONFLICT (workspace_id, message_id) DO NOTHING
  RETURNING workspace_id, message_id`;

const mergedTraits = (table: string) => `tidings_merge_traits(${table}.traits, ${table}.trait_times, EXCLUDED.traits, EXCLUDED.trait_times)`;
const mergedTimes = (table: string) => `tidings_merge_trait_times(${table}.trait_times, EXCLUDED.trait_times)`;

/** ON CONFLICT clause setting traits and trait_times; profiles also keep trait_time_max current. */
const onConflictSet = (table: "profiles" | "groups", keyColumn: "profile_id" | "group_id", traits: string, times: string) => `
  ON CONFLICT (workspace_id, ${keyColumn}) DO UPDATE SET
    traits = ${traits},
    trait_times = ${times},${table === "profiles" ? "\n    trait_time_max = GREATEST(profiles.trait_time_max, EXCLUDED.trait_time_max)," : ""}
    updated_at = now()`;

/** ON CONFLICT clause merging EXCLUDED's traits into `table`'s row per key, latest time wins. */
export const mergeTraitsOnConflict = (table: "profiles" | "groups", keyColumn: "profile_id" | "group_id") =>
  onConflictSet(table, keyColumn, mergedTraits(table), mergedTimes(table));

const newerThanProfile = "profiles.trait_time_max <= EXCLUDED.trait_time_max";

/**
 * The same merge for profile rows whose traits all carry one time (trait_time_max), as a single
 * identify's do: when that time is at least the profile's newest trait time, every key it
 * carries wins, so jsonb concatenation does the merge without the per-key functions.
 */
export const mergeUniformProfileTraitsOnConflict = onConflictSet(
  "profiles",
  "profile_id",
  `CASE WHEN ${newerThanProfile} THEN profiles.traits || EXCLUDED.traits ELSE ${mergedTraits("profiles")} END`,
  `CASE WHEN ${newerThanProfile} THEN profiles.trait_times || EXCLUDED.trait_times ELSE ${mergedTimes("profiles")} END`,
);

/** Inserts the events; returns those that were new (replays are left out). */
async function insertEvents(client: pg.PoolClient, rows: WorkspaceEvent[]): Promise<WorkspaceEvent[]> {
  const sorted = uniqueSorted(rows);
  const { rows: inserted } = await client.query<{ workspace_id: string; message_id: string }>(insertEventsFrom(EVENT_COLUMNS_SQL), eventColumns(sorted));
  if (inserted.length === sorted.length) return sorted;
  const fresh = new Set(inserted.map((r) => key(r.workspace_id, r.message_id)));
  return sorted.filter((r) => fresh.has(key(r.workspaceId, r.ev.messageId)));
}

/** Current alias → profile links for every id these events mention. */
async function loadAliases(client: pg.PoolClient, events: WorkspaceEvent[]): Promise<Map<string, string>> {
  const ws: string[] = [];
  const ids: string[] = [];
  const seen = new Set<string>();
  for (const { workspaceId, ev } of events) {
    for (const id of [ev.userId, ev.anonymousId, ev.previousId]) {
      if (id === null) continue;
      const k = key(workspaceId, id);
      if (seen.has(k)) continue;
      seen.add(k);
      ws.push(workspaceId);
      ids.push(id);
    }
  }
  const { rows } = await client.query<{ workspace_id: string; alias_id: string; profile_id: string }>(
    `SELECT a.workspace_id, a.alias_id, a.profile_id FROM profile_aliases a
     JOIN unnest($1::uuid[], $2::text[]) AS q(ws, id) ON a.workspace_id = q.ws AND a.alias_id = q.id`,
    [ws, ids],
  );
  return new Map(rows.map((r) => [key(r.workspace_id, r.alias_id), r.profile_id]));
}

/**
 * Links `source` (an anonymousId or previous id) to the profile `target`: the source's profile,
 * aliases and group memberships move to the target. The first link of an id wins.
 */
async function linkIdentity(client: pg.PoolClient, workspaceId: string, source: string, target: string, aliases: Map<string, string>) {
  if (source === target || aliases.has(key(workspaceId, source))) return;
  const { rowCount } = await client.query(
    `INSERT INTO profile_aliases (workspace_id, alias_id, profile_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
    [workspaceId, source, target],
  );
  if (!rowCount) return;
  await client.query(`UPDATE profile_aliases SET profile_id = $3 WHERE workspace_id = $1 AND profile_id = $2`, [workspaceId, source, target]);
  await client.query(
    `WITH gone AS (DELETE FROM profiles WHERE workspace_id = $1 AND profile_id = $2 RETURNING traits, trait_times, trait_time_max, created_at)
     INSERT INTO profiles (workspace_id, profile_id, traits, trait_times, trait_time_max, created_at)
     SELECT $1, $3, traits, trait_times, trait_time_max, created_at FROM gone
     ${mergeTraitsOnConflict("profiles", "profile_id")},
       created_at = LEAST(profiles.created_at, EXCLUDED.created_at)`,
    [workspaceId, source, target],
  );
  await client.query(
    `WITH gone AS (DELETE FROM group_memberships WHERE workspace_id = $1 AND profile_id = $2 RETURNING group_id, joined_at)
     INSERT INTO group_memberships (workspace_id, profile_id, group_id, joined_at)
     SELECT $1, $3, group_id, joined_at FROM gone ON CONFLICT DO NOTHING`,
    [workspaceId, source, target],
  );
  for (const [k, v] of aliases) if (v === source && k.startsWith(`${workspaceId}\u0000`)) aliases.set(k, target);
  aliases.set(key(workspaceId, source), target);
}

interface TraitState {
  traits: Record<string, unknown>;
  times: Record<string, number>;
}

/** Folds traits into a state per key; a later or equal event time wins (same rule as the SQL). */
function foldTraits(state: TraitState, traits: Record<string, unknown>, time: number) {
  for (const [k, v] of Object.entries(traits)) {
    const cur = state.times[k];
    if (cur === undefined || time >= cur) {
      state.traits[k] = v;
      state.times[k] = time;
    }
  }
}

const byKey = <T>(m: Map<string, T>) => [...m.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

/** A profile as the events of one commit leave it: folded traits, their newest time, and whether all share it. */
export interface ProfileRow {
  ws: string;
  id: string;
  state: TraitState;
  timeMax: number;
  uniform: boolean;
}

/** One row per profile the events touch (identify traits folded), sorted so concurrent commits lock in one order. */
export function profileRows(events: WorkspaceEvent[], resolve: (ws: string, id: string) => string): ProfileRow[] {
  const profiles = new Map<string, { ws: string; id: string; state: TraitState }>();
  for (const { workspaceId, ev } of events) {
    const id = resolve(workspaceId, ev.type === "alias" ? ev.userId! : ev.profileId);
    const k = key(workspaceId, id);
    let p = profiles.get(k);
    if (!p) profiles.set(k, (p = { ws: workspaceId, id, state: { traits: {}, times: {} } }));
    if (ev.type === "identify" && ev.traits) foldTraits(p.state, ev.traits, ev.eventTime.getTime());
  }
  return byKey(profiles).map(([, p]) => {
    let min = Infinity;
    let max = 0;
    for (const t of Object.values(p.state.times)) {
      min = Math.min(min, t);
      max = Math.max(max, t);
    }
    return { ...p, timeMax: max, uniform: min === Infinity || min === max };
  });
}

/** `profileRows` as the five column arrays of (workspace_id, profile_id, traits, trait_times, trait_time_max). */
export function profileColumns(rows: ProfileRow[]): unknown[][] {
  return [rows.map((p) => p.ws), rows.map((p) => p.id), rows.map((p) => JSON.stringify(p.state.traits)), rows.map((p) => JSON.stringify(p.state.times)), rows.map((p) => p.timeMax)];
}

/** Creates profiles and merges identify traits. */
async function upsertProfiles(client: pg.PoolClient, events: WorkspaceEvent[], resolve: (ws: string, id: string) => string) {
  await client.query(
    `INSERT INTO profiles (workspace_id, profile_id, traits, trait_times, trait_time_max)
     SELECT * FROM unnest($1::uuid[], $2::text[], $3::jsonb[], $4::jsonb[], $5::int8[])
     ${mergeTraitsOnConflict("profiles", "profile_id")}
     WHERE EXCLUDED.trait_times <> '{}'::jsonb`,
    profileColumns(profileRows(events, resolve)),
  );
}

async function applyGroups(client: pg.PoolClient, events: WorkspaceEvent[], resolve: (ws: string, id: string) => string) {
  const groups = new Map<string, { ws: string; id: string; state: TraitState }>();
  const members = new Map<string, { ws: string; pid: string; gid: string; at: Date }>();
  for (const { workspaceId, ev } of events) {
    if (ev.type !== "group" || ev.groupId === null) continue;
    const gk = key(workspaceId, ev.groupId);
    let g = groups.get(gk);
    if (!g) groups.set(gk, (g = { ws: workspaceId, id: ev.groupId, state: { traits: {}, times: {} } }));
    foldTraits(g.state, ev.traits ?? {}, ev.eventTime.getTime());
    const pid = resolve(workspaceId, ev.profileId);
    const mk = `${gk}\u0000${pid}`;
    const m = members.get(mk);
    if (!m || ev.eventTime < m.at) members.set(mk, { ws: workspaceId, pid, gid: ev.groupId, at: ev.eventTime });
  }
  if (groups.size === 0) return;
  const g = byKey(groups).map(([, v]) => v);
  await client.query(
    `INSERT INTO groups (workspace_id, group_id, traits, trait_times)
     SELECT * FROM unnest($1::uuid[], $2::text[], $3::jsonb[], $4::jsonb[])
     ${mergeTraitsOnConflict("groups", "group_id")}`,
    [g.map((x) => x.ws), g.map((x) => x.id), g.map((x) => JSON.stringify(x.state.traits)), g.map((x) => JSON.stringify(x.state.times))],
  );
  const m = byKey(members).map(([, v]) => v);
  await client.query(
    `INSERT INTO group_memberships (workspace_id, profile_id, group_id, joined_at)
     SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::timestamptz[])
     ON CONFLICT (workspace_id, profile_id, group_id) DO UPDATE SET joined_at = LEAST(group_memberships.joined_at, EXCLUDED.joined_at)`,
    [m.map((x) => x.ws), m.map((x) => x.pid), m.map((x) => x.gid), m.map((x) => x.at)],
  );
}

/** Stores events and applies their effects in the caller's transaction. Returns how many were new. */
export async function storeEvents(client: pg.PoolClient, rows: WorkspaceEvent[]): Promise<number> {
  const fresh = await insertEvents(client, rows);
  if (fresh.length === 0) return 0;
  const aliases = await loadAliases(client, fresh);
  const resolve = (ws: string, id: string) => aliases.get(key(ws, id)) ?? id;
  const links = fresh
    .filter(({ ev }) => (ev.type === "identify" && ev.userId && ev.anonymousId) || ev.type === "alias")
    .sort((a, b) => a.ev.eventTime.getTime() - b.ev.eventTime.getTime());
  for (const { workspaceId, ev } of links) {
    const source = ev.type === "alias" ? ev.previousId! : ev.anonymousId!;
    await linkIdentity(client, workspaceId, source, resolve(workspaceId, ev.userId!), aliases);
  }
  await upsertProfiles(client, fresh, resolve);
  await applyGroups(client, fresh, resolve);
  return fresh.length;
}
