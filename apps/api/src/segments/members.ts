// Hand-set members of segments whose definition has a Manual node, and the listing of current
// members (kept by the segment engine, engine/).
import { hasManualNode, type SegmentMembersRequestBody, type SegmentMembersResponse, type SegmentUsersQuery } from "@tidings/schema";
import type { PrismaClient } from "../db/client.ts";
import type { Prisma } from "../generated/prisma/client.ts";
import { ApiError } from "../lib/errors.ts";
import { decodeCursor, page } from "../http/pagination.ts";
import { resolveDisjoint } from "../profiles/index.ts";
import { outboxKey, recordChange } from "../outbox/index.ts";
import { definitionOf, findSegment } from "./service.ts";

export async function changeMembers(
  prisma: PrismaClient,
  workspaceId: string,
  segmentId: string,
  body: SegmentMembersRequestBody,
): Promise<SegmentMembersResponse> {
  const segment = await findSegment(prisma, workspaceId, segmentId);
  if (!hasManualNode(definitionOf(segment))) {
    throw new ApiError(
      "CONFLICT",
      `Segment ${JSON.stringify(segment.name)} is computed from its definition; members can be set only on a segment whose definition has a Manual node`,
    );
  }
  const [add, remove] = await resolveDisjoint(
    prisma,
    workspaceId,
    { field: "add", ids: body.add ?? [] },
    { field: "remove", ids: body.remove ?? [] },
  );
  return prisma.$transaction(async (tx) => {
    const added = await tx.segmentManualMember.createMany({
      data: add.map((profileId) => ({ workspaceId, segmentId, profileId })),
      skipDuplicates: true,
    });
    // A hand-set member is a known user even before it sends an event.
    await tx.profile.createMany({ data: add.map((profileId) => ({ workspaceId, profileId })), skipDuplicates: true });
    const removed = await tx.segmentManualMember.deleteMany({ where: { workspaceId, segmentId, profileId: { in: remove } } });
    await recordChange(tx, workspaceId, [...add, ...remove], [outboxKey.manual]);
    const total = await tx.segmentManualMember.count({ where: { workspaceId, segmentId } });
    return { added: added.count, removed: removed.count, total };
  });
}

/** Current members ordered by user id, keyset-paginated; with `search`, those whose id contains it. */
export async function listSegmentUsers(prisma: PrismaClient, workspaceId: string, segmentId: string, query: SegmentUsersQuery) {
  await findSegment(prisma, workspaceId, segmentId);
  const where: Prisma.SegmentMembershipWhereInput = { workspaceId, segmentId };
  where.profileId = {
    ...(query.cursor ? { gt: decodeCursor(query.cursor, ["string"])[0] } : {}),
    // Prisma passes `contains` to ILIKE as it is: LIKE's wildcards (and its escape) are escaped here.
    ...(query.search ? { contains: query.search.replace(/[\\%_]/g, "\\$&"), mode: "insensitive" as const } : {}),
  };
  const rows = await prisma.segmentMembership.findMany({ where, orderBy: { profileId: "asc" }, take: query.limit + 1 });
  const result = page(
    rows,
    query.limit,
    (r) => ({ userId: r.profileId, enteredAt: r.enteredAt.getTime() }),
    (r) => [r.profileId],
  );
  return { ...result, users: result.items };
}
