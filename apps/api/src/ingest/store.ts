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

const q = JSON.stringify;

/** A JSON array of rows, each written as JSON text by `row`. */
const jsonArray = <T>(items: T[], row: (item: T) => string) => `[${items.map(row).join(",")}]`;

/**
 * The events as one JSON array of rows for `eventsFromJson`. Payloads are JSON already and go in
 * as they are: the driver escapes nothing (ten text arrays cost it ~6 µs per event). Workspace ids
 * (UUIDs) and types (known kinds) need no escaping; times go as epoch ms.
 */
export const eventsJson = (rows: WorkspaceEvent[]) =>
  jsonArray(
    rows,
    ({ workspaceId, ev }) =>
      `["${workspaceId}",${q(ev.messageId)},"${ev.type}",${q(ev.profileId)},${q(ev.userId)},${q(ev.anonymousId)},${q(ev.event)},${ev.eventTime.getTime()},${ev.receivedAt.getTime()},${ev.payloadJson}]`,
  );

const epochMs = (text: string) => `('epoch'::timestamptz + (${text})::int8 * interval '1 millisecond')`;

/** The rows of `eventsJson(…)` passed as `param`, as a table `input` with the events' columns. */
export const eventsFromJson = (param: string) => `(SELECT (r->>0)::uuid AS workspace_id, r->>1 AS message_id, r->>2 AS type, r->>3 AS profile_id,
    r->>4 AS user_id, r->>5 AS anonymous_id, r->>6 AS event, ${epochMs("r->>7")} AS event_time, ${epochMs("r->>8")} AS received_at, r->9 AS payload
  FROM jsonb_array_elements(${param}::jsonb) AS x(r)) AS input`;

/**
 * Inserts the rows of `source` (shaped like `eventsFromJson`). With `skipStored`, messageIds the
 * workspace already has are skipped and the new rows returned; without, a stored messageId fails
 * the statement (23505), which spares PostgreSQL the speculative insertion of ON CONFLICT.
 */
export const insertEventsFrom = (source: string, skipStored = true) => `INSERT INTO events (workspace_id, message_id, type, profile_id, user_id, anonymous_id, event, event_time, received_at, payload)
  SELECT workspace_id, message_id, type, profile_id, user_id, anonymous_id, event, event_time, received_at, payload FROM ${source}${
    skipStored ? "\n  ON CONFLICT (workspace_id, message_id) DO NOTHING\n  RETURNING workspace_id, message_id" : ""
  }`;

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
  const { rows: inserted } = await client.query<{ workspace_id: string; message_id: string }>(insertEventsFrom(eventsFromJson("$1")), [eventsJson(sorted)]);
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

/**
 * Traits folded per key, a later or equal event time winning (the rule of tidings_merge_traits).
 * While every key carries one time, as a single identify's traits do, no per-key times are kept,
 * and the first event's traits object is used as it is until a second one must be merged in.
 */
export class TraitFold {
  /** Null until traits are added; an event's own object until `owned`. */
  private traits: Record<string, unknown> | null = null;
  private owned = false;
  /** Per-key times, or null while every key carries `time`. */
  private times: Record<string, number> | null = null;
  private time = 0;

  add(traits: Record<string, unknown>, time: number) {
    let hasKeys = false;
    for (const _ in traits) {
      hasKeys = true;
      break;
    }
    if (!hasKeys) return;
    if (this.traits === null) {
      this.traits = traits;
      this.time = time;
      return;
    }
    if (!this.owned) {
      this.traits = { ...this.traits };
      this.owned = true;
    }
    if (this.times === null && time === this.time) {
      Object.assign(this.traits, traits);
      return;
    }
    if (this.times === null) {
      this.times = {};
      for (const k in this.traits) this.times[k] = this.time;
    }
    for (const k in traits) {
      const cur = this.times[k];
      if (cur === undefined || time >= cur) {
        this.traits[k] = traits[k];
        this.times[k] = time;
      }
    }
  }

  /** The traits and per-key times as JSON, the newest time (0 when empty), and whether every key carries it. */
  result(): { traits: string; times: string; timeMax: number; uniform: boolean } {
    if (this.traits === null) return { traits: "{}", times: "{}", timeMax: 0, uniform: true };
    if (this.times === null) {
      const time = this.time;
      return { traits: q(this.traits), times: `{${Object.keys(this.traits).map((k) => `${q(k)}:${time}`).join(",")}}`, timeMax: time, uniform: true };
    }
    let min = Infinity;
    let max = 0;
    for (const k in this.times) {
      min = Math.min(min, this.times[k]!);
      max = Math.max(max, this.times[k]!);
    }
    return { traits: q(this.traits), times: q(this.times), timeMax: max, uniform: min === max };
  }
}

const byKey = <T>(m: Map<string, T>) => [...m.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

/** A profile as the events of one commit leave it. */
export interface ProfileRow {
  ws: string;
  id: string;
  fold: TraitFold;
}

/** One row per profile the events touch (identify traits folded), sorted so concurrent commits lock in one order. */
export function profileRows(events: WorkspaceEvent[], resolve: (ws: string, id: string) => string): ProfileRow[] {
  const profiles = new Map<string, ProfileRow>();
  for (const { workspaceId, ev } of events) {
    const id = resolve(workspaceId, ev.type === "alias" ? ev.userId! : ev.profileId);
    const k = key(workspaceId, id);
    let p = profiles.get(k);
    if (!p) profiles.set(k, (p = { ws: workspaceId, id, fold: new TraitFold() }));
    if (ev.type === "identify" && ev.traits) p.fold.add(ev.traits, ev.eventTime.getTime());
  }
  return byKey(profiles).map(([, p]) => p);
}

/** `profileRows` as one JSON array of rows for `profilesFromJson`. */
export const profilesJson = (rows: ProfileRow[]) =>
  jsonArray(rows, ({ ws, id, fold }) => {
    const r = fold.result();
    return `["${ws}",${q(id)},${r.traits},${r.times},${r.timeMax},${r.uniform}]`;
  });

/** The rows of `profilesJson(…)` passed as `param`, as a table `p`. */
export const profilesFromJson = (param: string) => `(SELECT (r->>0)::uuid AS workspace_id, r->>1 AS profile_id, r->2 AS traits, r->3 AS trait_times,
    (r->>4)::int8 AS trait_time_max, (r->>5)::bool AS uniform
  FROM jsonb_array_elements(${param}::jsonb) AS x(r)) AS p`;

/** Creates profiles and merges identify traits. */
async function upsertProfiles(client: pg.PoolClient, events: WorkspaceEvent[], resolve: (ws: string, id: string) => string) {
  await client.query(
    `INSERT INTO profiles (workspace_id, profile_id, traits, trait_times, trait_time_max)
     SELECT workspace_id, profile_id, traits, trait_times, trait_time_max FROM ${profilesFromJson("$1")}
     ${mergeTraitsOnConflict("profiles", "profile_id")}
     WHERE EXCLUDED.trait_times <> '{}'::jsonb`,
    [profilesJson(profileRows(events, resolve))],
  );
}

async function applyGroups(client: pg.PoolClient, events: WorkspaceEvent[], resolve: (ws: string, id: string) => string) {
  const groups = new Map<string, { ws: string; id: string; fold: TraitFold }>();
  const members = new Map<string, { ws: string; pid: string; gid: string; at: Date }>();
  for (const { workspaceId, ev } of events) {
    if (ev.type !== "group" || ev.groupId === null) continue;
    const gk = key(workspaceId, ev.groupId);
    let g = groups.get(gk);
    if (!g) groups.set(gk, (g = { ws: workspaceId, id: ev.groupId, fold: new TraitFold() }));
    g.fold.add(ev.traits ?? {}, ev.eventTime.getTime());
    const pid = resolve(workspaceId, ev.profileId);
    const mk = `${gk}\u0000${pid}`;
    const m = members.get(mk);
    if (!m || ev.eventTime < m.at) members.set(mk, { ws: workspaceId, pid, gid: ev.groupId, at: ev.eventTime });
  }
  if (groups.size === 0) return;
  const g = byKey(groups).map(([, v]) => ({ ...v, ...v.fold.result() }));
  await client.query(
    `INSERT INTO groups (workspace_id, group_id, traits, trait_times)
     SELECT * FROM unnest($1::uuid[], $2::text[], $3::jsonb[], $4::jsonb[])
     ${mergeTraitsOnConflict("groups", "group_id")}`,
    [g.map((x) => x.ws), g.map((x) => x.id), g.map((x) => x.traits), g.map((x) => x.times)],
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
