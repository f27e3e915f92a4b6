// Read side of ingestion: profiles (with linked identities resolved) and event listings.
import type { EventListQuery, EventRecord, EventType, UserResource } from "@tidings/schema";
import type { PrismaClient } from "../db/client.ts";
import type { Prisma } from "../generated/prisma/client.ts";
import { badRequest, notFound } from "../http/errors.ts";
import { decodeCursor, page } from "../http/pagination.ts";
import { canonicalIds } from "./identities.ts";
import { MAX_TIME, MIN_TIME } from "../ingest/normalize.ts";

type EventRow = {
  messageId: string;
  type: string;
  userId: string | null;
  anonymousId: string | null;
  event: string | null;
  eventTime: Date;
  receivedAt: Date;
  payload: Prisma.JsonValue;
};

export function toEventRecord(row: EventRow): EventRecord {
  return {
    messageId: row.messageId,
    type: row.type as EventType,
    userId: row.userId,
    anonymousId: row.anonymousId,
    event: row.event,
    timestamp: row.eventTime.getTime(),
    receivedAt: row.receivedAt.getTime(),
    payload: (row.payload ?? {}) as Record<string, unknown>,
  };
}

/** The canonical profile id of any id of a user, and every id that belongs to it. */
export async function resolveIdentity(prisma: PrismaClient, workspaceId: string, id: string) {
  const [profileId = id] = await canonicalIds(prisma, workspaceId, [id]);
  const linked = await prisma.profileAlias.findMany({ where: { workspaceId, profileId }, orderBy: { createdAt: "asc" } });
  return { profileId, identities: linked.map((a) => a.aliasId) };
}

/** PostgreSQL text cannot hold NUL: the query would fail (500), and no stored id contains one. */
function refuseNul(value: string | undefined, path: string) {
  if (value?.includes("\u0000")) {
    throw badRequest("Values may not contain NUL (\\u0000) characters", [{ path, message: "contains a NUL character" }]);
  }
}

/** The position a cursor names; one PostgreSQL cannot compare against is no cursor of ours. */
function cursorPosition(cursor: string): [Date, string] {
  const [ms, messageId] = decodeCursor(cursor, ["number", "string"]);
  if (!Number.isSafeInteger(ms) || ms < MIN_TIME || ms > MAX_TIME || messageId.includes("\u0000")) {
    throw badRequest("Invalid cursor", [{ path: "cursor", message: "not a cursor returned by this endpoint" }]);
  }
  return [new Date(ms), messageId];
}

export async function getUser(prisma: PrismaClient, workspaceId: string, userId: string): Promise<UserResource> {
  refuseNul(userId, "params.userId");
  const { profileId, identities } = await resolveIdentity(prisma, workspaceId, userId);
  const profile = await prisma.profile.findUnique({ where: { workspaceId_profileId: { workspaceId, profileId } } });
  if (!profile) throw notFound(`User ${JSON.stringify(userId)}`);
  const ids = [profileId, ...identities];
  const [events, span, memberships] = await Promise.all([
    prisma.event.findMany({
      where: { workspaceId, identityId: { in: ids } },
      orderBy: [{ eventTime: "desc" }, { messageId: "desc" }],
      take: 50,
    }),
    prisma.event.aggregate({ where: { workspaceId, identityId: { in: ids } }, _min: { eventTime: true }, _max: { eventTime: true } }),
    prisma.groupMembership.findMany({ where: { workspaceId, profileId }, orderBy: { joinedAt: "asc" } }),
  ]);
  const groups = memberships.length
    ? await prisma.group.findMany({ where: { workspaceId, groupId: { in: memberships.map((m) => m.groupId) } } })
    : [];
  const groupTraits = new Map(groups.map((g) => [g.groupId, g.traits as Record<string, unknown>]));
  return {
    userId: profileId,
    workspaceId,
    traits: profile.traits as Record<string, unknown>,
    identities,
    groups: memberships.map((m) => ({ groupId: m.groupId, traits: groupTraits.get(m.groupId) ?? {}, joinedAt: m.joinedAt.getTime() })),
    firstSeenAt: (span._min.eventTime ?? profile.createdAt).getTime(),
    lastSeenAt: (span._max.eventTime ?? profile.createdAt).getTime(),
    recentEvents: events.map(toEventRecord),
  };
}

/** Events newest first (by event time), keyset-paginated. */
export async function listEvents(prisma: PrismaClient, workspaceId: string, query: EventListQuery) {
  refuseNul(query.userId, "querystring.userId");
  refuseNul(query.event, "querystring.event");
  const where: Prisma.EventWhereInput = { workspaceId };
  if (query.userId) {
    const { profileId, identities } = await resolveIdentity(prisma, workspaceId, query.userId);
    where.identityId = { in: [profileId, ...identities] };
  }
  if (query.event) where.event = query.event;
  if (query.cursor) {
    const [time, messageId] = cursorPosition(query.cursor);
    where.OR = [{ eventTime: { lt: time } }, { eventTime: time, messageId: { lt: messageId } }];
  }
  const rows = await prisma.event.findMany({
    where,
    orderBy: [{ eventTime: "desc" }, { messageId: "desc" }],
    take: query.limit + 1,
  });
  const result = page(rows, query.limit, toEventRecord, (r) => [r.eventTime.getTime(), r.messageId]);
  return { ...result, events: result.items };
}
