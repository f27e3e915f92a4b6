// The general case, one explicit transaction of several statements (sql.ts): inserts the events,
// skipping messageIds the workspace already has, then applies only the new events' effects:
// identity links, profile traits (per key, latest event time wins) and group membership.
import type pg from "pg";
import { inTransaction } from "../db/transaction.ts";
import {
  EVENT_COLUMNS,
  encodeRows,
  GROUP_COLUMNS,
  groupRows,
  IDENTITY_COLUMNS,
  identityRows,
  key,
  MEMBERSHIP_COLUMNS,
  OUTBOX_COLUMNS,
  outboxRows,
  PROFILE_COLUMNS,
  profileRows,
  uniqueSorted,
  type WorkspaceEvent,
} from "./rows.ts";
import {
  insertAlias,
  insertNewEvents,
  insertOutboxRows,
  moveMemberships,
  moveProfile,
  repointAliases,
  selectAliases,
  upsertGroups,
  upsertMemberships,
  upsertProfiles,
} from "./sql.ts";

/** Stores the events and applies their effects in one transaction. Returns how many were new. */
export async function storeInTransaction(pool: pg.Pool, rows: WorkspaceEvent[]): Promise<number> {
  const client = await pool.connect();
  try {
    return await inTransaction(client, () => storeEvents(client, rows));
  } finally {
    client.release();
  }
}

async function storeEvents(client: pg.PoolClient, rows: WorkspaceEvent[]): Promise<number> {
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
  await client.query(upsertProfiles(encodeRows(PROFILE_COLUMNS, profileRows(fresh, resolve))));
  const { groups, memberships } = groupRows(fresh, resolve);
  if (groups.length > 0) {
    await client.query(upsertGroups(encodeRows(GROUP_COLUMNS, groups)));
    await client.query(upsertMemberships(encodeRows(MEMBERSHIP_COLUMNS, memberships)));
  }
  await client.query(insertOutboxRows(encodeRows(OUTBOX_COLUMNS, outboxRows(fresh))));
  return fresh.length;
}

/** Inserts the events; returns those that were new (replays are left out). */
async function insertEvents(client: pg.PoolClient, rows: WorkspaceEvent[]): Promise<WorkspaceEvent[]> {
  const sorted = uniqueSorted(rows);
  const { rows: inserted } = await client.query<{ workspace_id: string; message_id: string }>(
    insertNewEvents(encodeRows(EVENT_COLUMNS, sorted)),
  );
  if (inserted.length === sorted.length) return sorted;
  const fresh = new Set(inserted.map((r) => key(r.workspace_id, r.message_id)));
  return sorted.filter((r) => fresh.has(key(r.workspaceId, r.ev.messageId)));
}

/** Current alias → profile links for every id these events mention. */
async function loadAliases(client: pg.PoolClient, events: WorkspaceEvent[]): Promise<Map<string, string>> {
  const { rows } = await client.query<{ workspace_id: string; alias_id: string; profile_id: string }>(
    selectAliases(encodeRows(IDENTITY_COLUMNS, identityRows(events))),
  );
  return new Map(rows.map((r) => [key(r.workspace_id, r.alias_id), r.profile_id]));
}

/**
 * Links `source` (an anonymousId or previous id) to the profile `target`: the source's profile,
 * aliases and group memberships move to the target. The first link of an id wins.
 */
async function linkIdentity(client: pg.PoolClient, workspaceId: string, source: string, target: string, aliases: Map<string, string>) {
  if (source === target || aliases.has(key(workspaceId, source))) return;
  const link = { workspaceId, source, target };
  const { rowCount } = await client.query(insertAlias(link));
  if (!rowCount) return;
  await client.query(repointAliases(link));
  await client.query(moveProfile(link));
  await client.query(moveMemberships(link));
  for (const [k, v] of aliases) if (v === source && k.startsWith(`${workspaceId}\u0000`)) aliases.set(k, target);
  aliases.set(key(workspaceId, source), target);
}
