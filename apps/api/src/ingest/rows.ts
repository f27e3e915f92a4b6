// What a commit sends to PostgreSQL: the rows of each kind, each kind's named column list,
// and the one JSON encoding every ingestion statement reads (sql.ts decodes it by name).
import { outboxKey } from "../outbox/index.ts";
import type { NormalizedEvent } from "./normalize.ts";
import { TraitFold } from "./trait-fold.ts";

export interface WorkspaceEvent {
  workspaceId: string;
  ev: NormalizedEvent;
}

export const key = (workspaceId: string, id: string) => `${workspaceId}\u0000${id}`;

const byKey = <T>(m: Map<string, T>): T[] => [...m.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);

/** One row per (workspace, messageId), sorted so concurrent commits lock in the same order. */
export function uniqueSorted(rows: WorkspaceEvent[]): WorkspaceEvent[] {
  const unique = new Map<string, WorkspaceEvent>();
  for (const r of rows) {
    const k = key(r.workspaceId, r.ev.messageId);
    if (!unique.has(k)) unique.set(k, r);
  }
  return byKey(unique);
}

// ---------------------------------------------------------------------------------------
// Column lists and their encoding

/** How SQL reads a column's JSON value; `epoch_ms` is a number of milliseconds read as timestamptz. */
export type ColumnType = "text" | "uuid" | "jsonb" | "int8" | "bool" | "epoch_ms";

/** One column of a row set: its SQL type, and a row's value for it as JSON text. */
export interface Column<Row> {
  type: ColumnType;
  json: (row: Row) => string;
}

/**
 * A row set's columns by name. The names are the SQL column names, plain lower-case identifiers
 * (the statements quote them: db/sql.ts `ident`).
 */
export type Columns<Row> = Record<string, Column<Row>>;

/**
 * `rows` as one JSON object keyed by column name, each key holding that column's values in row
 * order: `{"message_id":["a","b"],…,"payload":[{…},{…}]}`. The statement reads each column by
 * its name (sql.ts, `rowsFrom`). Names appear once per commit, not once per row: an object per
 * row is a quarter more text and cost PostgreSQL 3–5 µs more per event to decode.
 */
export function encodeRows<Row>(columns: Columns<Row>, rows: readonly Row[]): string {
  // Concatenated, not joined: an array per column cost a single-event commit ~2 µs more.
  let out = "{";
  for (const name in columns) {
    const json = columns[name]!.json;
    out += out === "{" ? `"${name}":[` : `,"${name}":[`;
    for (let i = 0; i < rows.length; i++) out += i === 0 ? json(rows[i]!) : `,${json(rows[i]!)}`;
    out += "]";
  }
  return `${out}}`;
}

const q = JSON.stringify;

/**
 * The columns of `events` a commit writes. Payloads are JSON already and go in as they are;
 * workspace ids (UUIDs) and types (known kinds) need no escaping; times go as epoch ms.
 */
export const EVENT_COLUMNS = {
  workspace_id: { type: "uuid", json: (r) => `"${r.workspaceId}"` },
  message_id: { type: "text", json: (r) => q(r.ev.messageId) },
  type: { type: "text", json: (r) => `"${r.ev.type}"` },
  identity_id: { type: "text", json: (r) => q(r.ev.identityId) },
  user_id: { type: "text", json: (r) => q(r.ev.userId) },
  anonymous_id: { type: "text", json: (r) => q(r.ev.anonymousId) },
  event: { type: "text", json: (r) => q(r.ev.event) },
  event_time: { type: "epoch_ms", json: (r) => String(r.ev.eventTime.getTime()) },
  received_at: { type: "epoch_ms", json: (r) => String(r.ev.receivedAt.getTime()) },
  payload: { type: "jsonb", json: (r) => r.ev.payloadJson },
} satisfies Columns<WorkspaceEvent>;

// ---------------------------------------------------------------------------------------
// Profiles

/** A profile as the events of one commit leave it; traits and times are JSON text. */
export interface ProfileRow {
  workspaceId: string;
  profileId: string;
  traits: string;
  traitTimes: string;
  /** The newest trait time (0 without traits). */
  traitTimeMax: number;
  /** Every trait carries traitTimeMax, as a single identify's do. */
  uniform: boolean;
}

/** The profile rows a commit sends: `profiles` columns, plus `uniform` for the merge (sql.ts). */
export const PROFILE_COLUMNS = {
  workspace_id: { type: "uuid", json: (r) => `"${r.workspaceId}"` },
  profile_id: { type: "text", json: (r) => q(r.profileId) },
  traits: { type: "jsonb", json: (r) => r.traits },
  trait_times: { type: "jsonb", json: (r) => r.traitTimes },
  trait_time_max: { type: "int8", json: (r) => String(r.traitTimeMax) },
  uniform: { type: "bool", json: (r) => String(r.uniform) },
} satisfies Columns<ProfileRow>;

/**
 * One row per profile the events touch, identify traits folded, sorted so concurrent commits
 * lock in one order. `resolve` maps an id to its profile (identity links).
 */
export function profileRows(events: WorkspaceEvent[], resolve: (ws: string, id: string) => string): ProfileRow[] {
  const profiles = new Map<string, { workspaceId: string; profileId: string; fold: TraitFold }>();
  for (const { workspaceId, ev } of events) {
    const profileId = resolve(workspaceId, ev.type === "alias" ? ev.userId! : ev.identityId);
    const k = key(workspaceId, profileId);
    let p = profiles.get(k);
    if (!p) {
      p = { workspaceId, profileId, fold: new TraitFold() };
      profiles.set(k, p);
    }
    if (ev.type === "identify" && ev.traits) p.fold.add(ev.traits, ev.eventTime.getTime());
  }
  return byKey(profiles).map(({ workspaceId, profileId, fold }) => {
    const r = fold.result();
    return { workspaceId, profileId, traits: r.traits, traitTimes: r.times, traitTimeMax: r.timeMax, uniform: r.uniform };
  });
}

// ---------------------------------------------------------------------------------------
// Groups

export interface GroupRow {
  workspaceId: string;
  groupId: string;
  traits: string;
  traitTimes: string;
}

export const GROUP_COLUMNS = {
  workspace_id: { type: "uuid", json: (r) => `"${r.workspaceId}"` },
  group_id: { type: "text", json: (r) => q(r.groupId) },
  traits: { type: "jsonb", json: (r) => r.traits },
  trait_times: { type: "jsonb", json: (r) => r.traitTimes },
} satisfies Columns<GroupRow>;

export interface MembershipRow {
  workspaceId: string;
  profileId: string;
  groupId: string;
  /** The earliest group event's time (epoch ms). */
  joinedAt: number;
}

export const MEMBERSHIP_COLUMNS = {
  workspace_id: { type: "uuid", json: (r) => `"${r.workspaceId}"` },
  profile_id: { type: "text", json: (r) => q(r.profileId) },
  group_id: { type: "text", json: (r) => q(r.groupId) },
  joined_at: { type: "epoch_ms", json: (r) => String(r.joinedAt) },
} satisfies Columns<MembershipRow>;

/** The groups the events' group calls touch (traits folded) and the memberships they record, both sorted. */
export function groupRows(
  events: WorkspaceEvent[],
  resolve: (ws: string, id: string) => string,
): { groups: GroupRow[]; memberships: MembershipRow[] } {
  const groups = new Map<string, { workspaceId: string; groupId: string; fold: TraitFold }>();
  const memberships = new Map<string, MembershipRow>();
  for (const { workspaceId, ev } of events) {
    if (ev.type !== "group" || ev.groupId === null) continue;
    const gk = key(workspaceId, ev.groupId);
    let g = groups.get(gk);
    if (!g) {
      g = { workspaceId, groupId: ev.groupId, fold: new TraitFold() };
      groups.set(gk, g);
    }
    g.fold.add(ev.traits ?? {}, ev.eventTime.getTime());
    const profileId = resolve(workspaceId, ev.identityId);
    const mk = `${gk}\u0000${profileId}`;
    const m = memberships.get(mk);
    const at = ev.eventTime.getTime();
    if (!m || at < m.joinedAt) memberships.set(mk, { workspaceId, profileId, groupId: ev.groupId, joinedAt: at });
  }
  return {
    groups: byKey(groups).map(({ workspaceId, groupId, fold }) => {
      const r = fold.result();
      return { workspaceId, groupId, traits: r.traits, traitTimes: r.times };
    }),
    memberships: byKey(memberships),
  };
}

// ---------------------------------------------------------------------------------------
// Identity links

export interface IdentityRow {
  workspaceId: string;
  id: string;
}

/** Ids to look up in profile_aliases. */
export const IDENTITY_COLUMNS = {
  workspace_id: { type: "uuid", json: (r) => `"${r.workspaceId}"` },
  alias_id: { type: "text", json: (r) => q(r.id) },
} satisfies Columns<IdentityRow>;

/** Every id the events mention (userId, anonymousId, previousId), once each. */
export function identityRows(events: WorkspaceEvent[]): IdentityRow[] {
  const ids = new Map<string, IdentityRow>();
  for (const { workspaceId, ev } of events) {
    for (const id of [ev.userId, ev.anonymousId, ev.previousId]) {
      if (id !== null && !ids.has(key(workspaceId, id))) ids.set(key(workspaceId, id), { workspaceId, id });
    }
  }
  return [...ids.values()];
}

// ---------------------------------------------------------------------------------------
// The change outbox (src/outbox)

export interface OutboxRow {
  workspaceId: string;
  /** Every id the events were sent under (links add both sides). */
  ids: string[];
  /** What the events change (outboxKey): track events, trait keys, `*` for a link. */
  keys: string[];
  /** messageIds of the track events (journeys' event entries). */
  trackIds: string[];
}

export const OUTBOX_COLUMNS = {
  workspace_id: { type: "uuid", json: (r) => `"${r.workspaceId}"` },
  ids: { type: "jsonb", json: (r) => q(r.ids) },
  keys: { type: "jsonb", json: (r) => q(r.keys) },
  track_ids: { type: "jsonb", json: (r) => q(r.trackIds) },
} satisfies Columns<OutboxRow>;

/** Distinct key sets a commit writes as rows of their own, per workspace; the rest share one row. */
const OUTBOX_KEY_SETS = 16;

/**
 * The commit's outbox rows: per workspace, one per distinct set of keys its events change (the
 * identifies' traits, each track event's name, …), so that the engine evaluates a segment only
 * for the users whose changes it depends on. Past OUTBOX_KEY_SETS sets, the rest share one row.
 */
export function outboxRows(events: WorkspaceEvent[]): OutboxRow[] {
  const rows = new Map<string, { workspaceId: string; ids: Set<string>; keys: Set<string>; trackIds: string[] }>();
  const sets = new Map<string, number>();
  for (const { workspaceId, ev } of events) {
    const keys = new Set<string>();
    const ids = [ev.identityId];
    if (ev.type === "track" && ev.event !== null) keys.add(outboxKey.event(ev.event));
    else if (ev.type === "identify" && ev.traits) for (const k in ev.traits) keys.add(outboxKey.trait(k));
    const linked = ev.type === "alias" ? ev.previousId : ev.type === "identify" && ev.userId !== null ? ev.anonymousId : null;
    if (linked !== null) {
      ids.push(linked);
      if (ev.type === "alias" && ev.userId !== null) ids.push(ev.userId);
      keys.add(outboxKey.any);
    }
    let set = `${workspaceId} ${[...keys].sort().join(" ")}`;
    if (!rows.has(set)) {
      const n = sets.get(workspaceId) ?? 0;
      if (n >= OUTBOX_KEY_SETS) set = `${workspaceId} (rest)`;
      else sets.set(workspaceId, n + 1);
    }
    let o = rows.get(set);
    if (!o) {
      o = { workspaceId, ids: new Set(), keys: new Set(), trackIds: [] };
      rows.set(set, o);
    }
    for (const id of ids) o.ids.add(id);
    for (const k of keys) o.keys.add(k);
    if (ev.type === "track" && ev.event !== null) o.trackIds.push(ev.messageId);
  }
  return [...rows.values()].map((o) => ({ workspaceId: o.workspaceId, ids: [...o.ids], keys: [...o.keys], trackIds: o.trackIds }));
}
