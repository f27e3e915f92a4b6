// Segments: upsert (by id or by name), list, get, delete. Membership lives in members.ts.
import { isDeepStrictEqual } from "node:util";
import {
  type ErrorIssue,
  manualSegmentDefinition,
  type SegmentDefinition,
  type SegmentListQuery,
  type SegmentResource,
  type UpsertSegmentRequestBody,
} from "@tidings/schema";
import type { PrismaClient } from "../db/client.ts";
import { Prisma, type Segment } from "../generated/prisma/client.ts";
import { ApiError, badRequest, notFound } from "../http/errors.ts";
import { afterNameAndId, page } from "../http/pagination.ts";
import { assertNotUsedByRunningJourney } from "../journeys/usage.ts";
import { isRecordNotFound, isUniqueViolation } from "../db/errors.ts";

/** The stored definition; rows written without one (by other code paths) read as manual. */
export const definitionOf = (row: Segment): SegmentDefinition =>
  (row.definition as SegmentDefinition | null) ?? manualSegmentDefinition();

export function toSegmentResource(row: Segment): SegmentResource {
  return {
    id: row.id,
    workspaceId: row.workspaceId,
    name: row.name,
    definition: definitionOf(row),
    ...(row.subscriptionGroupId ? { subscriptionGroupId: row.subscriptionGroupId } : {}),
    updatedAt: row.updatedAt.getTime(),
    createdAt: row.createdAt.getTime(),
    definitionUpdatedAt: row.definitionUpdatedAt.getTime(),
    ...(row.lastRecomputed ? { lastRecomputed: row.lastRecomputed.getTime() } : {}),
  };
}

export async function findSegment(prisma: PrismaClient, workspaceId: string, id: string): Promise<Segment> {
  const row = await prisma.segment.findUnique({ where: { workspaceId_id: { workspaceId, id } } });
  if (!row) throw notFound(`Segment ${id}`);
  return row;
}

/** Subscription groups named by the body must exist in the workspace (the column and SubscriptionGroup nodes). */
async function checkSubscriptionGroups(prisma: PrismaClient, workspaceId: string, body: UpsertSegmentRequestBody) {
  const wanted: { id: string; path: string }[] = [];
  if (body.subscriptionGroupId) wanted.push({ id: body.subscriptionGroupId, path: "subscriptionGroupId" });
  if (body.definition) {
    const located = [{ node: body.definition.entryNode, path: "definition.entryNode" }];
    body.definition.nodes.forEach((node, i) => located.push({ node, path: `definition.nodes.${i}` }));
    for (const { node, path } of located) {
      if (node.type === "SubscriptionGroup") wanted.push({ id: node.subscriptionGroupId, path: `${path}.subscriptionGroupId` });
    }
  }
  if (wanted.length === 0) return;
  const found = await prisma.subscriptionGroup.findMany({
    where: { workspaceId, id: { in: [...new Set(wanted.map((w) => w.id))] } },
    select: { id: true },
  });
  const known = new Set(found.map((g) => g.id));
  const issues: ErrorIssue[] = wanted
    .filter((w) => !known.has(w.id))
    .map((w) => ({ path: w.path, message: `no subscription group ${w.id} in this workspace` }));
  if (issues.length > 0) throw badRequest("Unknown subscription group", issues);
}

const nameTaken = (name: string) => new ApiError("CONFLICT", `A segment named ${JSON.stringify(name)} already exists in this workspace`);

/**
 * PUT semantics: keyed by `id` when given, else by name. On update, an omitted `definition` or
 * `subscriptionGroupId` keeps the stored value; `updatedAt` moves only when something changed and
 * `definitionUpdatedAt` only when the definition did (compared structurally, key order ignored).
 */
export async function upsertSegment(
  prisma: PrismaClient,
  workspaceId: string,
  body: UpsertSegmentRequestBody,
  retried = false,
): Promise<SegmentResource> {
  if (!retried) await checkSubscriptionGroups(prisma, workspaceId, body);
  const existing = body.id
    ? await prisma.segment.findUnique({ where: { workspaceId_id: { workspaceId, id: body.id } } })
    : await prisma.segment.findUnique({ where: { workspaceId_name: { workspaceId, name: body.name } } });
  const now = new Date();

  if (!existing) {
    try {
      const row = await prisma.segment.create({
        data: {
          workspaceId,
          ...(body.id ? { id: body.id } : {}),
          name: body.name,
          definition: (body.definition ?? manualSegmentDefinition()) as Prisma.InputJsonValue,
          subscriptionGroupId: body.subscriptionGroupId ?? null,
          createdAt: now,
          updatedAt: now,
          definitionUpdatedAt: now,
        },
      });
      return toSegmentResource(row);
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      // A concurrent PUT created it first: answer as an update of that row (or 409 if the name is another's).
      if (!retried) return upsertSegment(prisma, workspaceId, body, true);
      throw nameTaken(body.name);
    }
  }

  const definitionChanged = body.definition !== undefined && !isDeepStrictEqual(definitionOf(existing), body.definition);
  const groupChanged = body.subscriptionGroupId !== undefined && (body.subscriptionGroupId ?? null) !== existing.subscriptionGroupId;
  const nameChanged = body.name !== existing.name;
  if (!definitionChanged && !groupChanged && !nameChanged) return toSegmentResource(existing);
  try {
    const row = await prisma.segment.update({
      where: { workspaceId_id: { workspaceId, id: existing.id } },
      data: {
        name: body.name,
        updatedAt: now,
        ...(definitionChanged ? { definition: body.definition as Prisma.InputJsonValue, definitionUpdatedAt: now } : {}),
        ...(groupChanged ? { subscriptionGroupId: body.subscriptionGroupId ?? null } : {}),
      },
    });
    return toSegmentResource(row);
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken(body.name);
    if (isRecordNotFound(err)) throw notFound(`Segment ${existing.id}`);
    throw err;
  }
}

/** Segments ordered by name then id, keyset-paginated. */
export async function listSegments(prisma: PrismaClient, workspaceId: string, query: SegmentListQuery) {
  const where: Prisma.SegmentWhereInput = { workspaceId };
  if (query.cursor) Object.assign(where, afterNameAndId(query.cursor));
  const rows = await prisma.segment.findMany({ where, orderBy: [{ name: "asc" }, { id: "asc" }], take: query.limit + 1 });
  const result = page(rows, query.limit, toSegmentResource, (r) => [r.name, r.id]);
  return { ...result, segments: result.items };
}

export async function deleteSegment(prisma: PrismaClient, workspaceId: string, id: string): Promise<void> {
  const row = await findSegment(prisma, workspaceId, id);
  await assertNotUsedByRunningJourney(prisma, workspaceId, id, `Segment ${JSON.stringify(row.name)}`);
  const [, deleted] = await prisma.$transaction([
    prisma.segmentManualMember.deleteMany({ where: { workspaceId, segmentId: id } }),
    prisma.segment.deleteMany({ where: { workspaceId, id } }),
  ]);
  if (deleted.count === 0) throw notFound(`Segment ${id}`);
}
