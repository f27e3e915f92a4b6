// Read side of deliveries: filtered, newest first, keyset-paginated.
import type { DeliveryListQuery, DeliveryRecord } from "@tidings/schema";
import type { PrismaClient } from "../db/client.ts";
import type { Delivery, Prisma } from "../generated/prisma/client.ts";
import { notFound } from "../lib/errors.ts";
import { decodeCursor, page } from "../http/pagination.ts";
import { canonicalIds } from "../profiles/index.ts";

export function toDeliveryRecord(d: Delivery, content = false): DeliveryRecord {
  return {
    id: d.id,
    workspaceId: d.workspaceId,
    userId: d.userId,
    channel: d.channel,
    ...(d.templateId ? { templateId: d.templateId } : {}),
    ...(d.broadcastId ? { broadcastId: d.broadcastId } : {}),
    ...(d.journeyId ? { journeyId: d.journeyId } : {}),
    ...(d.runId ? { runId: d.runId } : {}),
    ...(d.nodeId ? { nodeId: d.nodeId } : {}),
    status: d.status,
    ...(d.reason ? { reason: d.reason } : {}),
    ...(d.status === "Deferred" || (d.status === "Queued" && d.dueAt.getTime() > Date.now()) ? { notBefore: d.dueAt.getTime() } : {}),
    ...(d.category ? { category: d.category } : {}),
    ...(d.timezone ? { timezone: d.timezone, timezoneSource: d.timezoneSource as DeliveryRecord["timezoneSource"] } : {}),
    ...(d.providerMessageId ? { providerMessageId: d.providerMessageId } : {}),
    attempts: d.attempts,
    createdAt: d.createdAt.getTime(),
    updatedAt: d.updatedAt.getTime(),
    ...(content && d.contact ? { contact: d.contact } : {}),
    ...(content && d.rendered && typeof d.rendered === "object" ? { rendered: d.rendered as Record<string, unknown> } : {}),
  };
}

export async function listDeliveries(prisma: PrismaClient, workspaceId: string, query: DeliveryListQuery) {
  const where: Prisma.DeliveryWhereInput = { workspaceId };
  if (query.userId) where.userId = (await canonicalIds(prisma, workspaceId, [query.userId]))[0]!;
  if (query.broadcastId) where.broadcastId = query.broadcastId;
  if (query.journeyId) where.journeyId = query.journeyId;
  if (query.runId) where.runId = query.runId;
  if (query.channel) where.channel = query.channel;
  if (query.status) where.status = query.status;
  const created: Prisma.DateTimeFilter = {};
  if (query.since !== undefined) created.gte = new Date(query.since);
  if (query.until !== undefined) created.lt = new Date(query.until);
  if (query.cursor) {
    const [ms, id] = decodeCursor(query.cursor, ["number", "string"]);
    where.OR = [{ createdAt: { lt: new Date(ms) } }, { createdAt: new Date(ms), id: { lt: id } }];
  }
  if (Object.keys(created).length > 0) where.createdAt = created;
  const rows = await prisma.delivery.findMany({ where, orderBy: [{ createdAt: "desc" }, { id: "desc" }], take: query.limit + 1 });
  const content = query.include === "content";
  const result = page(
    rows,
    query.limit,
    (r) => toDeliveryRecord(r, content),
    (r) => [r.createdAt.getTime(), r.id],
  );
  return { ...result, deliveries: result.items };
}

export async function getDelivery(prisma: PrismaClient, workspaceId: string, id: string): Promise<DeliveryRecord> {
  const row = await prisma.delivery.findUnique({ where: { workspaceId_id: { workspaceId, id } } });
  if (!row) throw notFound(`Delivery ${id}`);
  return toDeliveryRecord(row);
}
