// References between resources, stored as rows (tables described in prisma/schema.prisma): a
// referrer (a running journey, a segment; later a broadcast) holds the targets it needs
// (segments, templates, subscription groups). This module takes and releases holds, locks
// targets while a referrer is checked against them, and answers 409 naming the holders when a
// target is deleted, or changed in a way that would break them.
//
// The locking, in one sentence per side: a referrer share-locks its targets (lockTargets) before
// checking them and keeps the lock until it commits its holds; a delete or a change locks the
// target row (FOR UPDATE) before looking for holders. Whichever comes second waits for the
// first and then sees what it did: a start after a delete finds the target gone (400), a delete
// after a start finds the hold (409). The foreign keys (ON DELETE RESTRICT) back this up: no
// path can delete a held target.
import type { ReferrerKind } from "../generated/prisma/client.ts";
import { ApiError, notFound } from "../lib/errors.ts";
import type { PrismaClient } from "./client.ts";
import { ident, prismaExecute, prismaRows, sql } from "./sql.ts";
import type { Tx } from "./upsert.ts";

export type { ReferrerKind };
export type TargetKind = "Segment" | "MessageTemplate" | "SubscriptionGroup";

export interface Target {
  kind: TargetKind;
  id: string;
}
export interface Referrer {
  kind: ReferrerKind;
  id: string;
}

const targetKinds: Record<TargetKind, { table: string; holds: string; label: string }> = {
  Segment: { table: "segments", holds: "segment_references", label: "Segment" },
  MessageTemplate: { table: "message_templates", holds: "message_template_references", label: "Template" },
  SubscriptionGroup: { table: "subscription_groups", holds: "subscription_group_references", label: "Subscription group" },
};

/** How a 409 names holders of each kind (a journey holds only while it runs). */
const referrerKinds: Record<ReferrerKind, { table: string; label: string }> = {
  Journey: { table: "journeys", label: "running journey(s)" },
  Segment: { table: "segments", label: "segment(s)" },
  Broadcast: { table: "broadcasts", label: "unfinished broadcast(s)" },
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Distinct ids of one kind (lower case, as PostgreSQL prints them); strings that are not UUIDs name nothing. */
function idsOf(wanted: readonly Target[], kind: TargetKind): string[] {
  return [...new Set(wanted.filter((t) => t.kind === kind && UUID.test(t.id)).map((t) => t.id.toLowerCase()))].sort();
}

/**
 * Share-locks the targets that exist (FOR SHARE: neither deleted nor updated by others until
 * this transaction ends) and returns their ids by kind. Read them after this call to check them.
 */
export async function lockTargets(tx: Tx, workspaceId: string, wanted: readonly Target[]): Promise<Record<TargetKind, Set<string>>> {
  const found = { Segment: new Set<string>(), MessageTemplate: new Set<string>(), SubscriptionGroup: new Set<string>() };
  for (const kind of Object.keys(targetKinds) as TargetKind[]) {
    const ids = idsOf(wanted, kind);
    if (ids.length === 0) continue;
    const rows = await prismaRows<{ id: string }>(
      tx,
      sql`SELECT id::text FROM ${ident(targetKinds[kind].table)}
      WHERE workspace_id = ${workspaceId}::uuid AND id = ANY(${ids}::uuid[])
      ORDER BY id FOR SHARE`,
    );
    for (const row of rows) found[kind].add(row.id);
  }
  return found;
}

/**
 * Makes `referrer` hold exactly `wanted` (nothing: releases every hold). The targets must exist;
 * take them with lockTargets first, or a concurrent delete turns this into a foreign key error.
 */
export async function setHolds(tx: Tx, workspaceId: string, referrer: Referrer, wanted: readonly Target[]): Promise<void> {
  for (const kind of Object.keys(targetKinds) as TargetKind[]) {
    const holds = ident(targetKinds[kind].holds);
    const ids = idsOf(wanted, kind);
    await prismaExecute(
      tx,
      sql`DELETE FROM ${holds}
      WHERE workspace_id = ${workspaceId}::uuid AND referrer_kind = ${referrer.kind}::"ReferrerKind"
        AND referrer_id = ${referrer.id}::uuid AND target_id <> ALL(${ids}::uuid[])`,
    );
    if (ids.length === 0) continue;
    await prismaExecute(
      tx,
      sql`INSERT INTO ${holds} (workspace_id, target_id, referrer_kind, referrer_id)
      SELECT ${workspaceId}::uuid, target_id, ${referrer.kind}::"ReferrerKind", ${referrer.id}::uuid
      FROM unnest(${ids}::uuid[]) AS target_id
      ON CONFLICT DO NOTHING`,
    );
  }
}

/** Who holds the target (of the given kinds, else any), by kind then name. */
export async function holdersOf(
  tx: Tx,
  workspaceId: string,
  target: Target,
  kinds: readonly ReferrerKind[] = Object.keys(referrerKinds) as ReferrerKind[],
): Promise<{ kind: ReferrerKind; id: string; name: string }[]> {
  const holders: { kind: ReferrerKind; id: string; name: string }[] = [];
  for (const kind of kinds) {
    const rows = await prismaRows<{ id: string; name: string }>(
      tx,
      sql`SELECT r.id::text, r.name FROM ${ident(targetKinds[target.kind].holds)} h
      JOIN ${ident(referrerKinds[kind].table)} r ON r.workspace_id = h.workspace_id AND r.id = h.referrer_id
      WHERE h.workspace_id = ${workspaceId}::uuid AND h.target_id = ${target.id}::uuid
        AND h.referrer_kind = ${kind}::"ReferrerKind"
      ORDER BY r.name, r.id`,
    );
    holders.push(...rows.map((r) => ({ kind, ...r })));
  }
  return holders;
}

/**
 * 409 naming who holds the target, when anyone (of `kinds`) does. `what` names the target
 * (`Template "Welcome"`); `why`, when given, says what cannot change while they hold it.
 * Lock the target row first (FOR UPDATE) so that no hold is taken meanwhile.
 */
export async function assertNotHeld(
  tx: Tx,
  workspaceId: string,
  target: Target,
  what: string,
  options: { kinds?: readonly ReferrerKind[]; why?: string } = {},
): Promise<void> {
  const holders = await holdersOf(tx, workspaceId, target, options.kinds);
  if (holders.length === 0) return;
  const byKind = (Object.keys(referrerKinds) as ReferrerKind[])
    .map((kind) => ({ kind, names: holders.filter((h) => h.kind === kind).map((h) => h.name) }))
    .filter((g) => g.names.length > 0)
    .map((g) => `${referrerKinds[g.kind].label}: ${g.names.join(", ")}`);
  throw new ApiError("CONFLICT", `${what} is used by ${byKind.join("; ")}${options.why ? `; ${options.why}` : ""}`);
}

/**
 * DELETE of a resource others may hold, in one transaction: locks its row (a hold being taken
 * meanwhile waits, then finds it gone), 404 when absent, 409 naming the holders, else `remove`
 * deletes the row and what belongs to it.
 */
export async function deleteUnlessHeld(
  prisma: PrismaClient,
  workspaceId: string,
  target: Target,
  remove: (tx: Tx) => Promise<void>,
): Promise<void> {
  const { table, label } = targetKinds[target.kind];
  await prisma.$transaction(async (tx) => {
    const rows = await prismaRows<{ name: string }>(
      tx,
      sql`SELECT name FROM ${ident(table)} WHERE workspace_id = ${workspaceId}::uuid AND id = ${target.id}::uuid FOR UPDATE`,
    );
    const row = rows[0];
    if (!row) throw notFound(`${label} ${target.id}`);
    await assertNotHeld(tx, workspaceId, target, `${label} ${JSON.stringify(row.name)}`);
    await remove(tx);
  });
}
