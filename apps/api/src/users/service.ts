// Read side of ingestion: profiles (with linked identities resolved) and event listings.
import { userRuns } from "../journeys/index.ts";
import type { EventListQuery, EventRecord, EventType, UserListQuery, UserResource } from "@tidings/schema";
import type { PrismaClient } from "../db/client.ts";
import { prismaExecute, sql } from "../db/sql.ts";
import type { Prisma } from "../generated/prisma/client.ts";
import { badRequest, notFound } from "../lib/errors.ts";
import { decodeCursor, page } from "../http/pagination.ts";
import { resolveIdentity } from "../profiles/index.ts";
import { MAX_TIME, MIN_TIME } from "../ingest/index.ts";
import { findSegment } from "../segments/index.ts";

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
  const [events, span, memberships, segments, changes, journeyRuns] = await Promise.all([
    prisma.event.findMany({
      where: { workspaceId, identityId: { in: ids } },
      orderBy: [{ eventTime: "desc" }, { messageId: "desc" }],
      take: 50,
    }),
    prisma.event.aggregate({ where: { workspaceId, identityId: { in: ids } }, _min: { eventTime: true }, _max: { eventTime: true } }),
    prisma.groupMembership.findMany({ where: { workspaceId, profileId }, orderBy: { joinedAt: "asc" } }),
    prisma.segmentMembership.findMany({ where: { workspaceId, profileId } }),
    prisma.segmentMembershipChange.findMany({ where: { workspaceId, profileId }, orderBy: [{ at: "desc" }, { id: "desc" }], take: 50 }),
    userRuns(prisma, workspaceId, profileId),
  ]);
  const [groups, segmentRows] = await Promise.all([
    memberships.length ? prisma.group.findMany({ where: { workspaceId, groupId: { in: memberships.map((m) => m.groupId) } } }) : [],
    segments.length || changes.length
      ? prisma.segment.findMany({
          where: { workspaceId, id: { in: [...new Set([...segments, ...changes].map((m) => m.segmentId))] } },
          select: { id: true, name: true },
        })
      : [],
  ]);
  // A segment deleted since its memberships (or changes) were read is left out.
  const segmentNames = new Map(segmentRows.map((s) => [s.id, s.name]));
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
    segments: segments
      .flatMap((m) => {
        const name = segmentNames.get(m.segmentId);
        return name === undefined ? [] : [{ segmentId: m.segmentId, name, enteredAt: m.enteredAt.getTime() }];
      })
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
    segmentChanges: changes.flatMap((c) => {
      const name = segmentNames.get(c.segmentId);
      return name === undefined ? [] : [{ segmentId: c.segmentId, name, entered: c.entered, at: c.at.getTime() }];
    }),
    journeyRuns,
  };
}

/** Users ordered by id, keyset-paginated; with `segmentId`, the segment's current members. */
export async function listUsers(prisma: PrismaClient, workspaceId: string, query: UserListQuery) {
  const after = query.cursor ? decodeCursor(query.cursor, ["string"])[0] : undefined;
  refuseNul(after, "querystring.cursor");
  const where: Prisma.ProfileWhereInput = { workspaceId };
  if (after !== undefined) where.profileId = { gt: after };
  let entered: Map<string, number> | undefined;
  if (query.segmentId) {
    await findSegment(prisma, workspaceId, query.segmentId);
    // Members are a subset of profiles; the membership table's key finds them in order.
    const members = await prisma.segmentMembership.findMany({
      where: { workspaceId, segmentId: query.segmentId, ...(after !== undefined ? { profileId: { gt: after } } : {}) },
      orderBy: { profileId: "asc" },
      take: query.limit + 1,
      select: { profileId: true, enteredAt: true },
    });
    where.profileId = { in: members.map((m) => m.profileId) };
    entered = new Map(members.map((m) => [m.profileId, m.enteredAt.getTime()]));
  }
  const rows = await prisma.profile.findMany({ where, orderBy: { profileId: "asc" }, take: query.limit + 1 });
  const result = page(
    rows,
    query.limit,
    (r) => {
      const enteredAt = entered?.get(r.profileId);
      return {
        userId: r.profileId,
        traits: r.traits as Record<string, unknown>,
        createdAt: r.createdAt.getTime(),
        ...(enteredAt !== undefined ? { enteredAt } : {}),
      };
    },
    (r) => [r.profileId],
  );
  return { ...result, users: result.items };
}

/**
 * Erases a user: profile, events under any of its ids, links, groups, subscription choices,
 * segment memberships (each segment's count follows) and their history, and what its deliveries
 * said about it (contact point, rendered content, user id). One transaction.
 */
export async function deleteUser(prisma: PrismaClient, workspaceId: string, userId: string): Promise<void> {
  refuseNul(userId, "params.userId");
  const { profileId, identities } = await resolveIdentity(prisma, workspaceId, userId);
  const ids = [profileId, ...identities];
  await prisma.$transaction(async (tx) => {
    const gone = await tx.profile.deleteMany({ where: { workspaceId, profileId } });
    if (gone.count === 0) throw notFound(`User ${JSON.stringify(userId)}`);
    await prismaExecute(
      tx,
      sql`WITH left_ AS (
        DELETE FROM segment_memberships WHERE workspace_id = ${workspaceId}::uuid AND profile_id = ${profileId} RETURNING segment_id)
      UPDATE segments s SET member_count = s.member_count - n.count
      FROM (SELECT segment_id, count(*)::int AS count FROM left_ GROUP BY segment_id) n
      WHERE s.workspace_id = ${workspaceId}::uuid AND s.id = n.segment_id`,
    );
    await tx.segmentMembershipChange.deleteMany({ where: { workspaceId, profileId } });
    await tx.segmentTimer.deleteMany({ where: { workspaceId, profileId } });
    await tx.segmentManualMember.deleteMany({ where: { workspaceId, profileId } });
    await tx.subscriptionAssignment.deleteMany({ where: { workspaceId, profileId } });
    await tx.groupMembership.deleteMany({ where: { workspaceId, profileId } });
    await tx.event.deleteMany({ where: { workspaceId, identityId: { in: ids } } });
    await tx.profileAlias.deleteMany({ where: { workspaceId, profileId } });
    // Deliveries stay counted in their broadcasts, without anything that names the person.
    // A failure's reason may quote the contact point (a push token, an address): blanked too.
    await prismaExecute(
      tx,
      sql`UPDATE deliveries SET user_id = 'erased:' || id, contact = NULL, rendered = NULL,
        reason = CASE WHEN contact IS NULL OR contact = '' THEN reason ELSE replace(reason, contact, '[erased]') END, updated_at = now()
      WHERE workspace_id = ${workspaceId}::uuid AND user_id = ${profileId}`,
    );
    // Journey runs likewise: counted in their journey's stats, nameless, and ended.
    await prismaExecute(
      tx,
      sql`UPDATE journey_runs SET user_id = 'erased:' || id, event = NULL, updated_at = now(),
        status = CASE WHEN status = 'Active' THEN 'Ended'::"JourneyRunStatus" ELSE status END,
        ended_at = coalesce(ended_at, now()), due_at = NULL
      WHERE workspace_id = ${workspaceId}::uuid AND user_id = ${profileId}`,
    );
    await tx.journeySignal.deleteMany({ where: { workspaceId, userId: profileId } });
  });
}

/** Events newest first, by event time or (`order: "received"`) by receipt, keyset-paginated. */
export async function listEvents(prisma: PrismaClient, workspaceId: string, query: EventListQuery) {
  refuseNul(query.userId, "querystring.userId");
  refuseNul(query.event, "querystring.event");
  const where: Prisma.EventWhereInput = { workspaceId };
  if (query.userId) {
    const { profileId, identities } = await resolveIdentity(prisma, workspaceId, query.userId);
    where.identityId = { in: [profileId, ...identities] };
  }
  if (query.event) where.event = query.event;
  if (query.receivedSince !== undefined) where.receivedAt = { gte: new Date(query.receivedSince) };
  const key = query.order === "received" ? "receivedAt" : "eventTime";
  if (query.cursor) {
    const [time, messageId] = cursorPosition(query.cursor);
    where.AND = { OR: [{ [key]: { lt: time } }, { [key]: time, messageId: { lt: messageId } }] };
  }
  const rows = await prisma.event.findMany({
    where,
    orderBy: [{ [key]: "desc" }, { messageId: "desc" }],
    take: query.limit + 1,
  });
  const result = page(rows, query.limit, toEventRecord, (r) => [r[key].getTime(), r.messageId]);
  return { ...result, events: result.items };
}
