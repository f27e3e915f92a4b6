// Subscription groups: upsert (by id or by name), list, get, delete.
import type { SubscriptionGroupListQuery, SubscriptionGroupResource, UpsertSubscriptionGroupRequestBody } from "@tidings/schema";
import type { PrismaClient } from "../db/client.ts";
import { Prisma, type SubscriptionGroup } from "../generated/prisma/client.ts";
import { ApiError, notFound } from "../http/errors.ts";
import { afterNameAndId, page } from "../http/pagination.ts";
import { assertNotUsedByRunningJourney } from "../journeys/usage.ts";
import { isRecordNotFound, isUniqueViolation } from "../db/errors.ts";

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

/** PUT semantics: keyed by `id` when given, else by name; `updatedAt` moves only when something changed. */
export async function upsertSubscriptionGroup(
  prisma: PrismaClient,
  workspaceId: string,
  body: UpsertSubscriptionGroupRequestBody,
  retried = false,
): Promise<SubscriptionGroupResource> {
  const existing = body.id
    ? await prisma.subscriptionGroup.findUnique({ where: { workspaceId_id: { workspaceId, id: body.id } } })
    : await prisma.subscriptionGroup.findUnique({ where: { workspaceId_name: { workspaceId, name: body.name } } });
  const now = new Date();
  const fields = { name: body.name, channel: body.channel, type: body.type };

  if (!existing) {
    try {
      const row = await prisma.subscriptionGroup.create({
        data: { workspaceId, ...(body.id ? { id: body.id } : {}), ...fields, createdAt: now, updatedAt: now },
      });
      return toSubscriptionGroupResource(row);
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      // A concurrent PUT created it first: answer as an update of that row (or 409 if the name is another's).
      if (!retried) return upsertSubscriptionGroup(prisma, workspaceId, body, true);
      throw nameTaken(body.name);
    }
  }

  if (existing.name === fields.name && existing.channel === fields.channel && existing.type === fields.type) {
    return toSubscriptionGroupResource(existing);
  }
  try {
    const row = await prisma.subscriptionGroup.update({
      where: { workspaceId_id: { workspaceId, id: existing.id } },
      data: { ...fields, updatedAt: now },
    });
    return toSubscriptionGroupResource(row);
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken(body.name);
    if (isRecordNotFound(err)) throw notFound(`Subscription group ${existing.id}`);
    throw err;
  }
}

/** Groups ordered by name then id, keyset-paginated. */
export async function listSubscriptionGroups(prisma: PrismaClient, workspaceId: string, query: SubscriptionGroupListQuery) {
  const where: Prisma.SubscriptionGroupWhereInput = { workspaceId };
  if (query.cursor) Object.assign(where, afterNameAndId(query.cursor));
  const rows = await prisma.subscriptionGroup.findMany({ where, orderBy: [{ name: "asc" }, { id: "asc" }], take: query.limit + 1 });
  const result = page(rows, query.limit, toSubscriptionGroupResource, (r) => [r.name, r.id]);
  return { ...result, subscriptionGroups: result.items };
}

/** 409 while a segment links the group (its column or a SubscriptionGroup node) or a running journey uses it. */
export async function deleteSubscriptionGroup(prisma: PrismaClient, workspaceId: string, id: string): Promise<void> {
  const row = await findSubscriptionGroup(prisma, workspaceId, id);
  const what = `Subscription group ${JSON.stringify(row.name)}`;
  // Ids are UUIDs, so a text match in the definition is exact enough.
  const segments = await prisma.$queryRaw<{ name: string }[]>`
    SELECT name FROM segments
    WHERE workspace_id = ${workspaceId}::uuid
      AND (subscription_group_id = ${id}::uuid OR strpos(definition::text, ${id}) > 0)
    ORDER BY name`;
  if (segments.length > 0) {
    throw new ApiError("CONFLICT", `${what} is used by segment(s): ${segments.map((s) => s.name).join(", ")}`);
  }
  await assertNotUsedByRunningJourney(prisma, workspaceId, id, what);
  const [, deleted] = await prisma.$transaction([
    prisma.subscriptionAssignment.deleteMany({ where: { workspaceId, subscriptionGroupId: id } }),
    prisma.subscriptionGroup.deleteMany({ where: { workspaceId, id } }),
  ]);
  if (deleted.count === 0) throw notFound(`Subscription group ${id}`);
}
