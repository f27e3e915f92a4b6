// Segments: upsert (by id or by name), list, get, delete. Membership lives in members.ts.
import {
  type ErrorIssue,
  manualSegmentDefinition,
  SegmentDefinition,
  type SegmentListQuery,
  type SegmentResource,
  type UpsertSegmentRequestBody,
} from "@tidings/schema";
import type { PrismaClient } from "../db/client.ts";
import { prismaExecute, sql } from "../db/sql.ts";
import { deleteUnlessHeld, lockTargets, setHolds, type Target } from "../db/references.ts";
import { sameJson, type Tx, type Upserted, upsert } from "../db/upsert.ts";
import type { Prisma, Segment } from "../generated/prisma/client.ts";
import { ApiError, badRequest, notFound } from "../lib/errors.ts";
import { afterNameAndId, page } from "../http/pagination.ts";
import { lockDependents } from "../outbox/index.ts";
import { definitionFailure, FAILURE_CLEARED } from "../db/failing.ts";
import { segmentDependencies } from "./engine/compile.ts";

/** The stored definition; rows written without one (by other code paths) read as manual. */
export const definitionOf = (row: Segment): SegmentDefinition => (row.definition as SegmentDefinition | null) ?? manualSegmentDefinition();

const validDefinition = (stored: unknown): { definition?: SegmentDefinition } => {
  const parsed = SegmentDefinition.safeParse(stored);
  return parsed.success ? { definition: parsed.data } : {};
};

export function toSegmentResource(row: Segment): SegmentResource {
  return {
    id: row.id,
    workspaceId: row.workspaceId,
    name: row.name,
    // A stored definition the current schema refuses is left out (the segment is failing: it says why).
    ...validDefinition(definitionOf(row)),
    ...(row.subscriptionGroupId ? { subscriptionGroupId: row.subscriptionGroupId } : {}),
    updatedAt: row.updatedAt.getTime(),
    createdAt: row.createdAt.getTime(),
    definitionUpdatedAt: row.definitionUpdatedAt.getTime(),
    ...(row.lastRecomputed ? { lastRecomputed: row.lastRecomputed.getTime() } : {}),
    memberCount: row.memberCount,
    ...definitionFailure(row),
  };
}

export async function findSegment(prisma: PrismaClient, workspaceId: string, id: string): Promise<Segment> {
  const row = await prisma.segment.findUnique({ where: { workspaceId_id: { workspaceId, id } } });
  if (!row) throw notFound(`Segment ${id}`);
  return row;
}

/** The subscription groups a segment names (its column and SubscriptionGroup nodes), with where. */
function groupsNamed(fields: { definition?: SegmentDefinition; subscriptionGroupId?: string | null }) {
  const named: (Target & { path: string })[] = [];
  if (fields.subscriptionGroupId) named.push({ kind: "SubscriptionGroup", id: fields.subscriptionGroupId, path: "subscriptionGroupId" });
  if (fields.definition) {
    const located = [
      { node: fields.definition.entryNode, path: "definition.entryNode" },
      ...fields.definition.nodes.map((node, i) => ({ node, path: `definition.nodes.${i}` })),
    ];
    for (const { node, path } of located) {
      if (node.type === "SubscriptionGroup")
        named.push({ kind: "SubscriptionGroup", id: node.subscriptionGroupId, path: `${path}.subscriptionGroupId` });
    }
  }
  return named;
}

/**
 * A segment holds the subscription groups it names (src/db/references.ts), so a group in use
 * cannot be deleted. Those the body names must exist (400); they are share-locked until the
 * holds are written, so a concurrent DELETE of one waits and then sees the hold.
 */
async function lockGroups(tx: Tx, workspaceId: string, body: UpsertSegmentRequestBody) {
  const named = groupsNamed(body);
  if (named.length === 0) return;
  const found = (await lockTargets(tx, workspaceId, named)).SubscriptionGroup;
  const issues: ErrorIssue[] = named
    .filter((g) => !found.has(g.id))
    .map((g) => ({ path: g.path, message: `no subscription group ${g.id} in this workspace` }));
  if (issues.length > 0) throw badRequest("Unknown subscription group", issues);
}

async function holdGroups(tx: Tx, workspaceId: string, row: Segment) {
  const named = groupsNamed({ definition: definitionOf(row), subscriptionGroupId: row.subscriptionGroupId });
  // A stored definition may name a group deleted before groups were held: hold what exists.
  const found = (await lockTargets(tx, workspaceId, named)).SubscriptionGroup;
  await setHolds(
    tx,
    workspaceId,
    { kind: "Segment", id: row.id },
    named.filter((g) => found.has(g.id)),
  );
}

const nameTaken = (name: string) => new ApiError("CONFLICT", `A segment named ${JSON.stringify(name)} already exists in this workspace`);

interface SegmentFields {
  name: string;
  definition: SegmentDefinition;
  subscriptionGroupId: string | null;
}

/**
 * PUT semantics (src/db/upsert.ts), in the caller's transaction: keyed by `id` when given, else by
 * name. On update, an omitted `definition` or `subscriptionGroupId` keeps the stored value;
 * `updatedAt` moves only when something changed and `definitionUpdatedAt` only when the
 * definition did (compared structurally).
 */
export async function upsertSegment(tx: Tx, workspaceId: string, body: UpsertSegmentRequestBody): Promise<Upserted<SegmentResource>> {
  const done = await upsert<Segment, SegmentFields, Partial<SegmentFields>>(tx, {
    table: "segments",
    workspaceId,
    id: body.id,
    key: sql`name = ${body.name}`,
    read: (tx, id) => tx.segment.findUnique({ where: { workspaceId_id: { workspaceId, id } } }),
    toCreate: () => ({
      name: body.name,
      definition: body.definition ?? manualSegmentDefinition(),
      subscriptionGroupId: body.subscriptionGroupId ?? null,
    }),
    changes: (existing) => segmentChanges(body, existing),
    validate: (tx) => lockGroups(tx, workspaceId, body),
    insert: (tx, fields, now) =>
      tx.segment.create({
        data: {
          workspaceId,
          ...(body.id ? { id: body.id } : {}),
          ...fields,
          definition: fields.definition as Prisma.InputJsonValue,
          createdAt: now,
          updatedAt: now,
          definitionUpdatedAt: now,
        },
      }),
    update: (tx, existing, changes, now) =>
      tx.segment.update({
        where: { workspaceId_id: { workspaceId, id: existing.id } },
        data: {
          ...changes,
          ...(changes.definition
            ? { definition: changes.definition as Prisma.InputJsonValue, definitionUpdatedAt: now, ...FAILURE_CLEARED }
            : {}),
          updatedAt: now,
        },
      }),
    afterWrite: (tx, row, write) => afterSegmentWrite(tx, row, write.existing === null ? null : write.update),
    keyTaken: () => nameTaken(body.name),
  });
  return { ...done, value: toSegmentResource(done.value) };
}

function segmentChanges(body: UpsertSegmentRequestBody, existing: Segment): Partial<SegmentFields> | null {
  const changes: Partial<SegmentFields> = {};
  if (body.name !== existing.name) changes.name = body.name;
  if (body.definition !== undefined && !sameJson(definitionOf(existing), body.definition)) changes.definition = body.definition;
  if (body.subscriptionGroupId !== undefined && body.subscriptionGroupId !== existing.subscriptionGroupId) {
    changes.subscriptionGroupId = body.subscriptionGroupId;
  }
  return Object.keys(changes).length > 0 ? changes : null;
}

/** After a create (`update` null) or an update: what the definition depends on, and the groups it holds. */
async function afterSegmentWrite(tx: Tx, row: Segment, update: Partial<SegmentFields> | null) {
  const workspaceId = row.workspaceId;
  if (update === null || update.definition !== undefined) {
    // What the segment depends on is known from now on, by every ingestion commit (src/outbox).
    await lockDependents(tx, workspaceId);
    const keys = segmentDependencies(definitionOf(row));
    await prismaExecute(
      tx,
      sql`UPDATE segments SET depends_on = ${keys}::text[] WHERE workspace_id = ${workspaceId}::uuid AND id = ${row.id}::uuid`,
    );
  }
  if (update === null || update.definition !== undefined || update.subscriptionGroupId !== undefined) {
    await holdGroups(tx, workspaceId, row);
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

/** 409 while a running journey uses the segment (it holds it); the segment's own holds go with it. */
export async function deleteSegment(prisma: PrismaClient, workspaceId: string, id: string): Promise<void> {
  await deleteUnlessHeld(prisma, workspaceId, { kind: "Segment", id }, async (tx) => {
    await setHolds(tx, workspaceId, { kind: "Segment", id }, []);
    await tx.segmentManualMember.deleteMany({ where: { workspaceId, segmentId: id } });
    await tx.segmentSize.deleteMany({ where: { workspaceId, segmentId: id } });
    await tx.segment.delete({ where: { workspaceId_id: { workspaceId, id } } });
  });
}
