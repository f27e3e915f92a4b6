// Broadcasts: execute (idempotent per name), read with counts, list, cancel. The sending itself
// runs on the job layer (runner.ts).
import type {
  BroadcastResource,
  BroadcastStatus,
  Channel,
  ExecuteBroadcastRequestBody,
  ExecuteBroadcastResponse,
  MessageTemplateDefinition,
  ListQuery,
} from "@tidings/schema";
import type { PrismaClient } from "../db/client.ts";
import { isUniqueViolation } from "../db/errors.ts";
import { lockTargets, setHolds, type Target } from "../db/references.ts";
import { prismaExecute } from "../db/sql.ts";
import { sameJson } from "../db/upsert.ts";
import type { Broadcast } from "../generated/prisma/client.ts";
import { ApiError, badRequest, notFound } from "../lib/errors.ts";
import { decodeCursor, page } from "../http/pagination.ts";
import { addJobQuery } from "../jobs/index.ts";
import { readTallies, skipUnsent, type TalliedCounts } from "../messaging/index.ts";

export const START_TASK = "broadcasts.start";
/** The start job's key: one waiting start per broadcast (ids are the clients', so it names the workspace). */
export const broadcastStartKey = (workspaceId: string, broadcastId: string) => `broadcast-start:${workspaceId}:${broadcastId}`;

/** The request as stored and compared: what a repeat must equal (the workspace is implied). */
function requestOf(body: ExecuteBroadcastRequestBody) {
  const { workspaceId: _ws, ...rest } = body;
  return JSON.parse(JSON.stringify(rest)) as Record<string, unknown>;
}

/** The template sent (inline or stored) and the messages' category (the broadcast's, else the stored template's). */
async function resolveTemplate(prisma: PrismaClient, workspaceId: string, body: ExecuteBroadcastRequestBody) {
  if (body.messageTemplateDefinition) return { template: body.messageTemplateDefinition, category: body.category ?? null };
  const row = await prisma.messageTemplate.findUnique({ where: { workspaceId_id: { workspaceId, id: body.templateId! } } });
  if (!row) throw badRequest("Unknown template", [{ path: "templateId", message: `no template ${body.templateId} in this workspace` }]);
  if (!row.definition)
    throw badRequest("The template has no definition", [{ path: "templateId", message: "the template has only a draft" }]);
  return { template: row.definition as MessageTemplateDefinition, category: body.category ?? row.category };
}

async function checkReferences(prisma: PrismaClient, workspaceId: string, body: ExecuteBroadcastRequestBody, channel: Channel) {
  if (body.segmentId && !(await prisma.segment.findUnique({ where: { workspaceId_id: { workspaceId, id: body.segmentId } } }))) {
    throw badRequest("Unknown segment", [{ path: "segmentId", message: `no segment ${body.segmentId} in this workspace` }]);
  }
  if (body.subscriptionGroupId) {
    const group = await prisma.subscriptionGroup.findUnique({ where: { workspaceId_id: { workspaceId, id: body.subscriptionGroupId } } });
    if (!group)
      throw badRequest("Unknown subscription group", [
        { path: "subscriptionGroupId", message: `no subscription group ${body.subscriptionGroupId} in this workspace` },
      ]);
    if (group.channel !== channel) {
      throw badRequest("The subscription group is for another channel", [
        { path: "subscriptionGroupId", message: `the group is for ${group.channel}, the template for ${channel}` },
      ]);
    }
  }
}

/**
 * Creates the broadcast and its start job in one transaction (the job exists iff the broadcast
 * does), or answers the existing one for a repeat of the same request; a different request under
 * the same name is a 409.
 */
export async function executeBroadcast(
  prisma: PrismaClient,
  workspaceId: string,
  body: ExecuteBroadcastRequestBody,
): Promise<ExecuteBroadcastResponse> {
  const request = requestOf(body);
  const existing = await prisma.broadcast.findUnique({ where: { workspaceId_name: { workspaceId, name: body.broadcastName } } });
  if (existing) return repeat(existing, request);
  const { template, category } = await resolveTemplate(prisma, workspaceId, body);
  await checkReferences(prisma, workspaceId, body, template.type);
  try {
    const row = await prisma.$transaction(async (tx) => {
      const created = await tx.broadcast.create({
        data: {
          workspaceId,
          name: body.broadcastName,
          request: request as never,
          channel: template.type,
          template: template as never,
          templateId: body.templateId ?? null,
          segmentId: body.segmentId ?? null,
          subscriptionGroupId: body.subscriptionGroupId ?? null,
          rateLimitPerSecond: body.rateLimitPerSecond ?? null,
          category,
        },
      });
      // An unfinished broadcast holds what it names: none of it can be deleted under it.
      const targets: Target[] = [];
      if (body.segmentId) targets.push({ kind: "Segment", id: body.segmentId });
      if (body.templateId) targets.push({ kind: "MessageTemplate", id: body.templateId });
      if (body.subscriptionGroupId) targets.push({ kind: "SubscriptionGroup", id: body.subscriptionGroupId });
      await lockTargets(tx, workspaceId, targets);
      await setHolds(tx, workspaceId, { kind: "Broadcast", id: created.id }, targets);
      await prismaExecute(
        tx,
        addJobQuery(START_TASK, { workspaceId, broadcastId: created.id }, { key: broadcastStartKey(workspaceId, created.id) }),
      );
      return created;
    });
    return { broadcastId: row.id, broadcastName: row.name, status: row.status, repeat: false, createdAt: row.createdAt.getTime() };
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    // Two first executes of one name at once: the other one won; answer as a repeat.
    const winner = await prisma.broadcast.findUniqueOrThrow({ where: { workspaceId_name: { workspaceId, name: body.broadcastName } } });
    return repeat(winner, request);
  }
}

function repeat(existing: Broadcast, request: Record<string, unknown>): ExecuteBroadcastResponse {
  if (!sameJson(existing.request, request)) {
    throw new ApiError(
      "CONFLICT",
      `A broadcast named ${JSON.stringify(existing.name)} was executed with a different request; use another broadcastName`,
    );
  }
  return {
    broadcastId: existing.id,
    broadcastName: existing.name,
    status: existing.status,
    repeat: true,
    createdAt: existing.createdAt.getTime(),
  };
}

/**
 * Each broadcast's deliveries by status: a completed one's as it completed (`finalCounts`), the
 * others' from their tallies (messaging's tallies.ts: counting the deliveries grew with the
 * broadcast, 0.4 s a read at a million, read every 2 s by a console).
 */
async function counts(prisma: PrismaClient, workspaceId: string, broadcasts: Broadcast[]) {
  const live = broadcasts.filter((b) => b.finalCounts === null).map((b) => b.id);
  const tallied = live.length === 0 ? new Map<string, TalliedCounts>() : await readTallies(prisma, workspaceId, live);
  const out = new Map<string, TalliedCounts>();
  for (const b of broadcasts) {
    const final = b.finalCounts as { sent: number; failed: number; skipped: number } | null;
    const c = final ? { ...final, pending: 0, deferred: 0 } : tallied.get(b.id);
    out.set(b.id, c ?? { sent: 0, failed: 0, skipped: 0, pending: 0, deferred: 0 });
  }
  return out;
}

function toResource(row: Broadcast, c: TalliedCounts): BroadcastResource {
  return {
    id: row.id,
    workspaceId: row.workspaceId,
    name: row.name,
    status: row.status as BroadcastStatus,
    channel: row.channel,
    ...(row.segmentId ? { segmentId: row.segmentId } : {}),
    ...(row.templateId ? { templateId: row.templateId } : {}),
    ...(row.subscriptionGroupId ? { subscriptionGroupId: row.subscriptionGroupId } : {}),
    ...(row.rateLimitPerSecond ? { rateLimitPerSecond: row.rateLimitPerSecond } : {}),
    ...(row.category ? { category: row.category } : {}),
    counts: { audience: row.audience, ...c },
    ...(row.reason ? { reason: row.reason } : {}),
    createdAt: row.createdAt.getTime(),
    ...(row.startedAt ? { startedAt: row.startedAt.getTime() } : {}),
    ...(row.completedAt ? { completedAt: row.completedAt.getTime() } : {}),
  };
}

export async function getBroadcast(prisma: PrismaClient, workspaceId: string, id: string): Promise<BroadcastResource> {
  const row = await prisma.broadcast.findUnique({ where: { workspaceId_id: { workspaceId, id } } });
  if (!row) throw notFound(`Broadcast ${id}`);
  return toResource(row, (await counts(prisma, workspaceId, [row])).get(id)!);
}

/** Newest first, keyset-paginated on (createdAt, id). */
export async function listBroadcasts(prisma: PrismaClient, workspaceId: string, query: ListQuery) {
  const where: Record<string, unknown> = { workspaceId };
  if (query.cursor) {
    const [ms, id] = decodeCursor(query.cursor, ["number", "string"]);
    const at = new Date(ms);
    where.OR = [{ createdAt: { lt: at } }, { createdAt: at, id: { lt: id } }];
  }
  const rows = await prisma.broadcast.findMany({ where, orderBy: [{ createdAt: "desc" }, { id: "desc" }], take: query.limit + 1 });
  const c = await counts(prisma, workspaceId, rows);
  const result = page(
    rows,
    query.limit,
    (r) => toResource(r, c.get(r.id)!),
    (r) => [r.createdAt.getTime(), r.id],
  );
  return { ...result, broadcasts: result.items };
}

/** Releases what a finished broadcast held. */
export function releaseBroadcast(prisma: PrismaClient, workspaceId: string, id: string) {
  return prisma.$transaction((tx) => setHolds(tx, workspaceId, { kind: "Broadcast", id }, []));
}

/** Stops a queued or running broadcast: unsent deliveries become Skipped (cancelled). */
export async function cancelBroadcast(prisma: PrismaClient, workspaceId: string, id: string): Promise<BroadcastResource> {
  await prisma.$transaction(async (tx) => {
    const row = await tx.broadcast.findUnique({ where: { workspaceId_id: { workspaceId, id } } });
    if (!row) throw notFound(`Broadcast ${id}`);
    const cancelled = await tx.broadcast.updateMany({
      where: { workspaceId, id, status: { in: ["Queued", "Running"] } },
      data: { status: "Cancelled", completedAt: new Date(), updatedAt: new Date() },
    });
    if (cancelled.count > 0) {
      await setHolds(tx, workspaceId, { kind: "Broadcast", id }, []);
      await skipUnsent(tx, workspaceId, id, "cancelled");
    }
  });
  return getBroadcast(prisma, workspaceId, id);
}
