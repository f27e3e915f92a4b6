// Users' explicit subscription choices. A user without a row gets the group type's default
// (subscribed for OptOut, not subscribed for OptIn).
import type { SubscriptionAssignmentListQuery, SubscriptionAssignmentsRequestBody, SubscriptionAssignmentsResponse } from "@tidings/schema";
import type { PrismaClient } from "../db/client.ts";
import { prismaExecute, sql } from "../db/sql.ts";
import type { Prisma } from "../generated/prisma/client.ts";
import { decodeCursor, page } from "../http/pagination.ts";
import { outboxKey, recordChange } from "../outbox/index.ts";
import { resolveDisjoint } from "../profiles/index.ts";
import { findSubscriptionGroup } from "./service.ts";

export async function assignSubscriptions(
  prisma: PrismaClient,
  workspaceId: string,
  groupId: string,
  body: SubscriptionAssignmentsRequestBody,
): Promise<SubscriptionAssignmentsResponse> {
  await findSubscriptionGroup(prisma, workspaceId, groupId);
  const [subscribe, unsubscribe] = await resolveDisjoint(
    prisma,
    workspaceId,
    { field: "subscribe", ids: body.subscribe ?? [] },
    { field: "unsubscribe", ids: body.unsubscribe ?? [] },
  );
  const profileIds = [...subscribe, ...unsubscribe];
  if (profileIds.length > 0) {
    const flags = [...subscribe.map(() => true), ...unsubscribe.map(() => false)];
    await prisma.$transaction(async (tx) => {
      await prismaExecute(
        tx,
        sql`
        INSERT INTO subscription_assignments (workspace_id, subscription_group_id, profile_id, subscribed, updated_at)
        SELECT ${workspaceId}::uuid, ${groupId}::uuid, t.profile_id, t.subscribed, now()
        FROM unnest(${profileIds}::text[], ${flags}::boolean[]) AS t(profile_id, subscribed)
        ON CONFLICT (workspace_id, subscription_group_id, profile_id)
        DO UPDATE SET subscribed = EXCLUDED.subscribed, updated_at = EXCLUDED.updated_at`,
      );
      await recordChange(tx, workspaceId, profileIds, [outboxKey.group(groupId)]);
    });
  }
  return { subscribed: subscribe.length, unsubscribed: unsubscribe.length };
}

/** Explicit choices ordered by user id, keyset-paginated. */
export async function listAssignments(prisma: PrismaClient, workspaceId: string, groupId: string, query: SubscriptionAssignmentListQuery) {
  await findSubscriptionGroup(prisma, workspaceId, groupId);
  const where: Prisma.SubscriptionAssignmentWhereInput = { workspaceId, subscriptionGroupId: groupId };
  if (query.cursor) where.profileId = { gt: decodeCursor(query.cursor, ["string"])[0] };
  const rows = await prisma.subscriptionAssignment.findMany({ where, orderBy: { profileId: "asc" }, take: query.limit + 1 });
  const result = page(
    rows,
    query.limit,
    (r) => ({ userId: r.profileId, subscribed: r.subscribed, updatedAt: r.updatedAt.getTime() }),
    (r) => [r.profileId],
  );
  return { ...result, assignments: result.items };
}
