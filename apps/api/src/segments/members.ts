// Hand-set members of segments whose definition has a Manual node, and the segment users listing.
// Computed membership (Trait, Performed, …) arrives with the segment engine; until then
// GET …/users lists only hand-set members, and a segment without a Manual node lists none.
import {
  type ErrorIssue,
  hasManualNode,
  type SegmentMembersRequestBody,
  type SegmentMembersResponse,
  type SegmentUsersQuery,
} from "@tidings/schema";
import type { PrismaClient } from "../db/client.ts";
import type { Prisma } from "../generated/prisma/client.ts";
import { ApiError, badRequest } from "../http/errors.ts";
import { decodeCursor, page } from "../http/pagination.ts";
import { resolveIdentity } from "../users/service.ts";
import { definitionOf, findSegment } from "./service.ts";

/**
 * Canonical profile ids of the given user ids (anonymousIds and previous ids resolve to the
 * profile they are linked to), in input order, with the index of each input.
 */
export async function resolveUserIds(prisma: PrismaClient, workspaceId: string, ids: string[]) {
  const resolved: { profileId: string; index: number }[] = [];
  // Bounded concurrency: the pool is shared with every other request.
  for (let start = 0; start < ids.length; start += 8) {
    const chunk = ids.slice(start, start + 8);
    const results = await Promise.all(chunk.map((id) => resolveIdentity(prisma, workspaceId, id)));
    results.forEach((r, i) => resolved.push({ profileId: r.profileId, index: start + i }));
  }
  return resolved;
}

/**
 * Resolves two lists of user ids that must not name the same user (after alias resolution);
 * 400 naming the item of the second list that repeats one of the first.
 */
export async function resolveDisjoint(
  prisma: PrismaClient,
  workspaceId: string,
  first: { field: string; ids: string[] },
  second: { field: string; ids: string[] },
): Promise<[string[], string[]]> {
  const [a, b] = await Promise.all([
    resolveUserIds(prisma, workspaceId, first.ids),
    resolveUserIds(prisma, workspaceId, second.ids),
  ]);
  const inFirst = new Set(a.map((r) => r.profileId));
  const issues: ErrorIssue[] = b
    .filter((r) => inFirst.has(r.profileId))
    .map((r) => ({ path: `${second.field}.${r.index}`, message: `user ${JSON.stringify(r.profileId)} is also in ${first.field}` }));
  if (issues.length > 0) throw badRequest(`A user cannot be in both ${first.field} and ${second.field}`, issues);
  return [[...inFirst], [...new Set(b.map((r) => r.profileId))]];
}

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
