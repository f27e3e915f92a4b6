// Subscription groups: upsert (by id or by name), list, get, delete.
import type { SubscriptionGroupListQuery, SubscriptionGroupResource, UpsertSubscriptionGroupRequestBody } from "@tidings/schema";
import type { PrismaClient } from "../db/client.ts";
import { assertNotHeld, deleteUnlessHeld } from "../db/references.ts";
import { type Tx, type Upserted, upsert } from "../db/upsert.ts";
import type { Prisma, SubscriptionGroup } from "../generated/prisma/client.ts";
import { sql } from "../db/sql.ts";
import { ApiError, notFound } from "../lib/errors.ts";
import { afterNameAndId, page } from "../http/pagination.ts";

export function toSubscriptionGroupResource(row: SubscriptionGroup): SubscriptionGroupResource {
  return {
    id: row.id,
    workspaceId: row.workspaceId,
    name: row.name,
    channel: row.channel,
    type: row.type,
    createdAt: row.createdAt.getTime(),
    updatedAt: row.updatedAt.getTime(),
  };
}

export async function findSubscriptionGroup(prisma: PrismaClient, workspaceId: string, id: string): Promise<SubscriptionGroup> {
  const row = await prisma.subscriptionGroup.findUnique({ where: { workspaceId_id: { workspaceId, id } } });
  if (!row) throw notFound(`Subscription group ${id}`);
  return row;
}

const nameTaken = (name: string) =>
  new ApiError("CONFLICT", `A subscription group named ${JSON.stringify(name)} already exists in this workspace`);

type GroupFields = Pick<SubscriptionGroup, "name" | "channel" | "type">;

/**
 * PUT semantics (src/db/upsert.ts), in the caller's transaction: keyed by `id` when given, else by name; `updatedAt` moves
 * only when something changed. Changing the channel is a 409 while a running journey sends
 * through the group (its message nodes are of the group's channel).
 */
export async function upsertSubscriptionGroup(
  tx: Tx,
  workspaceId: string,
  body: UpsertSubscriptionGroupRequestBody,
): Promise<Upserted<SubscriptionGroupResource>> {
  const fields: GroupFields = { name: body.name, channel: body.channel, type: body.type };
  const done = await upsert<SubscriptionGroup, GroupFields, Partial<GroupFields>>(tx, {
    table: "subscription_groups",
    workspaceId,
    id: body.id,
    key: sql`name = ${body.name}`,
    read: (tx, id) => tx.subscriptionGroup.findUnique({ where: { workspaceId_id: { workspaceId, id } } }),
    toCreate: () => fields,
    changes: (existing) => {
      const changes = Object.fromEntries(Object.entries(fields).filter(([k, v]) => existing[k as keyof GroupFields] !== v));
      return Object.keys(changes).length > 0 ? (changes as Partial<GroupFields>) : null;
    },
    validate: async (tx, write) => {
      if (write.existing === null || write.update.channel === undefined) return;
      const what = `Subscription group ${JSON.stringify(write.existing.name)}`;
      const why = `its channel cannot change from ${write.existing.channel} to ${write.update.channel} while they run`;
      await assertNotHeld(tx, workspaceId, { kind: "SubscriptionGroup", id: write.existing.id }, what, { kinds: ["Journey"], why });
    },
    insert: (tx, data, now) =>
      tx.subscriptionGroup.create({ data: { workspaceId, ...(body.id ? { id: body.id } : {}), ...data, createdAt: now, updatedAt: now } }),
    update: (tx, existing, changes, now) =>
      tx.subscriptionGroup.update({ where: { workspaceId_id: { workspaceId, id: existing.id } }, data: { ...changes, updatedAt: now } }),
    keyTaken: () => nameTaken(body.name),
  });
  return { ...done, value: toSubscriptionGroupResource(done.value) };
}

/** Groups ordered by name then id, keyset-paginated. */
export async function listSubscriptionGroups(prisma: PrismaClient, workspaceId: string, query: SubscriptionGroupListQuery) {
  const where: Prisma.SubscriptionGroupWhereInput = { workspaceId };
  if (query.cursor) Object.assign(where, afterNameAndId(query.cursor));
  const rows = await prisma.subscriptionGroup.findMany({ where, orderBy: [{ name: "asc" }, { id: "asc" }], take: query.limit + 1 });
  const result = page(rows, query.limit, toSubscriptionGroupResource, (r) => [r.name, r.id]);
  return { ...result, subscriptionGroups: result.items };
}

/** 409 while a segment names the group (its column or a SubscriptionGroup node) or a running journey uses it: both hold it. */
export async function deleteSubscriptionGroup(prisma: PrismaClient, workspaceId: string, id: string): Promise<void> {
  await deleteUnlessHeld(prisma, workspaceId, { kind: "SubscriptionGroup", id }, async (tx) => {
    await tx.subscriptionAssignment.deleteMany({ where: { workspaceId, subscriptionGroupId: id } });
    await tx.subscriptionGroup.delete({ where: { workspaceId_id: { workspaceId, id } } });
  });
}
