// Read side of ingested data: user profiles and their events.
import { z } from "./zod.js";
import { EpochMillis, JsonObject, ListQuery, listResponse, WorkspaceQuery } from "./common.js";
import { EventRecord } from "./events.js";
import { JourneyRun } from "./journeys.js";

export const UserGroup = z.object({
  groupId: z.string(),
  traits: JsonObject.describe("The group's traits."),
  joinedAt: EpochMillis,
});

export const UserResource = z.object({
  userId: z.string().describe("The user's id (or anonymousId for a visitor never identified)."),
  workspaceId: z.uuid(),
  traits: JsonObject.describe("Latest value of each trait (merged per key by event time)."),
  identities: z.array(z.string()).describe("Other ids linked to this user (anonymousIds, previous ids)."),
  groups: z.array(UserGroup),
  firstSeenAt: EpochMillis,
  lastSeenAt: EpochMillis,
  recentEvents: z.array(EventRecord).describe("The latest events of the user and its linked identities (up to 50)."),
  segments: z
    .array(z.object({ segmentId: z.uuid(), name: z.string(), enteredAt: EpochMillis.describe("When the user entered the segment.") }))
    .describe("The segments the user is a member of now, by name."),
  segmentChanges: z
    .array(
      z.object({
        segmentId: z.uuid(),
        name: z.string(),
        entered: z.boolean().describe("true: the user entered the segment; false: the user left it."),
        at: EpochMillis,
      }),
    )
    .optional()
    .describe(
      "The user's latest segment entries and exits, newest first (up to 50), from the membership history (kept for TIDINGS_EVENT_RETENTION_DAYS).",
    ),
  journeyRuns: z
    .array(JourneyRun.extend({ journeyName: z.string() }))
    .optional()
    .describe("The user's journey runs, newest first (up to 50)."),
});
export type UserResource = z.infer<typeof UserResource>;

export const UserParams = z.object({ userId: z.string().min(1).max(255) });

export const UserQuery = WorkspaceQuery;

export const UserSummary = z.object({
  userId: z.string().describe("The user's id (or anonymousId for a visitor never identified)."),
  traits: JsonObject.describe("Latest value of each trait."),
  createdAt: EpochMillis.describe("When the user was first seen."),
  enteredAt: EpochMillis.optional().describe("Listed with `segmentId`: when the user last entered that segment."),
});
export type UserSummary = z.infer<typeof UserSummary>;

export const UserListQuery = ListQuery.extend({
  segmentId: z.uuid().optional().describe("Only the current members of this segment."),
});
export type UserListQuery = z.infer<typeof UserListQuery>;

export const UserListResponse = listResponse("users", UserSummary);
export type UserListResponse = z.infer<typeof UserListResponse>;

export const EventListQuery = ListQuery.extend({
  userId: z.string().min(1).optional().describe("Only events of this user, including its linked identities."),
  event: z.string().min(1).optional().describe("Only track events with this name (or page/screen with this name)."),
  order: z
    .enum(["time", "received"])
    .optional()
    .describe(
      "`time` (default): newest event time first. `received`: newest received first — the order events reach the server, so an imported event with an old timestamp is still among the newest (what a tail follows).",
    ),
  receivedSince: z.coerce.number().int().optional().describe("Only events received at or after this time (ms since epoch)."),
});
export type EventListQuery = z.infer<typeof EventListQuery>;

export const EventListResponse = listResponse("events", EventRecord);
export type EventListResponse = z.infer<typeof EventListResponse>;
