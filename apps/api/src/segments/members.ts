// Hand-set members of segments whose definition has a Manual node, and the segment users listing.
// Computed membership (Trait, Performed, …) arrives with the segment engine; until then
// GET …/users lists only hand-set members, and a segment without a Manual node lists none.
import { hasManualNode, type SegmentMembersRequestBody, type SegmentMembersResponse, type SegmentUsersQuery } from "@tidings/schema";
import type { PrismaClient } from "../db/client.ts";
import type { Prisma } from "../generated/prisma/client.ts";
import { ApiError } from "../http/errors.ts";
import { decodeCursor, page } from "../http/pagination.ts";
import { resolveDisjoint } from "../users/identities.ts";
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
  const [added, removed, total] = await prisma.$transaction([
    prisma.segmentManualMember.createMany({
      data: add.map((profileId) => ({ workspaceId, segmentId, profileId })),
      skipDuplicates: true,
    }),
    prisma.segmentManualMember.deleteMany({ where: { workspaceId, segmentId, profileId: { in: remove } } }),
    prisma.segmentManualMember.count({ where: { workspaceId, segmentId } }),
  ]);
  return { added: added.count, removed: removed.count, total };
}

/** Members ordered by user id, keyset-paginated. */
export async function listSegmentUsers(prisma: PrismaClient, workspaceId: string, segmentId: string, query: SegmentUsersQuery) {
  const segment = await findSegment(prisma, workspaceId, segmentId);
  const cursor = query.cursor ? decodeCursor(query.cursor, ["string"])[0] : undefined;
  if (!hasManualNode(definitionOf(segment))) return { items: [], users: [], nextCursor: null };
  const where: Prisma.SegmentManualMemberWhereInput = { workspaceId, segmentId };
  if (cursor !== undefined) where.profileId = { gt: cursor };
  const rows = await prisma.segmentManualMember.findMany({ where, orderBy: { profileId: "asc" }, take: query.limit + 1 });
  const result = page(
    rows,
    query.limit,
    (r) => ({ userId: r.profileId, memberSince: r.createdAt.getTime() }),
    (r) => [r.profileId],
  );
  return { ...result, users: result.items };
}
