// Segment-compatible event shapes accepted by the public ingestion endpoints.
import { z } from "./zod.js";
import { JsonObject } from "./common.js";

export const EventType = z.enum(["identify", "track", "page", "screen", "group", "alias"]).describe("Kind of event (Segment spec).");
export type EventType = z.infer<typeof EventType>;

/** An identifier: Segment libraries send strings, some send numbers; both are stored as strings. */
const Identifier = z.union([z.string().min(1).max(255), z.number().finite()]).transform((v) => String(v));

const Timestamp = z
  .string()
  .max(64)
  .refine((v) => /^\d{4}-\d{2}-\d{2}/.test(v) && Number.isFinite(Date.parse(v)), {
    message: "must be an ISO 8601 date-time",
  })
  .describe("ISO 8601 date-time.");

const commonFields = {
  userId: Identifier.nullish().describe("Your identifier for the user. userId or anonymousId is required."),
  anonymousId: Identifier.nullish().describe("Identifier of a not yet known visitor."),
  messageId: z
    .string()
    .min(1)
    .max(100)
    .optional()
    .describe("Unique id of the event (≤ 100 chars); replays with the same id are stored once. Generated when absent."),
  timestamp: Timestamp.optional().describe("When the event happened (used when sentAt/originalTimestamp are absent)."),
  originalTimestamp: Timestamp.optional().describe("Device clock time of the event; corrected for clock skew with sentAt."),
  sentAt: Timestamp.optional().describe("Device clock time the event was sent."),
  context: JsonObject.optional().describe("Metadata about the user and the circumstances (ip, library, locale, …)."),
  integrations: JsonObject.optional(),
};

function requireIdentity(ev: { userId?: unknown; anonymousId?: unknown }, ctx: z.RefinementCtx) {
  if (ev.userId == null && ev.anonymousId == null) {
    ctx.addIssue({ code: "custom", path: ["userId"], message: "userId or anonymousId is required" });
  }
}

function kindSchema<K extends EventType, S extends z.ZodRawShape>(kind: K, shape: S, typeRequired: boolean) {
  const type = typeRequired ? z.literal(kind) : z.literal(kind).optional();
  return z.looseObject({ type, ...commonFields, ...shape }).superRefine(requireIdentity);
}

const identifyShape = { traits: JsonObject.optional().describe("User traits, merged into the profile per key.") };
const trackShape = {
  event: z
    .string({ error: (issue) => (issue.input === undefined ? "track needs `event` (the action's name)" : undefined) })
    .min(1, "track needs `event` (the action's name, not empty)")
    .max(200)
    .describe("Name of the action the user performed."),
  properties: JsonObject.optional(),
};
const pageShape = {
  name: z.string().max(200).optional().describe("Name of the page or screen."),
  category: z.string().max(200).optional(),
  properties: JsonObject.optional(),
};
const groupShape = {
  groupId: Identifier.describe("Identifier of the group (account, company, team)."),
  traits: JsonObject.optional().describe("Group traits."),
};
const aliasShape = {
  previousId: Identifier.describe("The identity the user had before (an anonymousId or an old userId)."),
  userId: Identifier.describe("The user's new identity."),
};

function kinds(typeRequired: boolean) {
  return {
    identify: kindSchema("identify", identifyShape, typeRequired),
    track: kindSchema("track", trackShape, typeRequired),
    page: kindSchema("page", pageShape, typeRequired),
    screen: kindSchema("screen", pageShape, typeRequired),
    group: kindSchema("group", groupShape, typeRequired),
    alias: kindSchema("alias", aliasShape, typeRequired),
  };
}

/** Bodies of the single-event endpoints: `type` may be omitted (the path implies it). */
const single = kinds(false);
export const IdentifyRequestBody = single.identify.describe("An identify event.");
export const TrackRequestBody = single.track.describe("A track event.");
export const PageRequestBody = single.page.describe("A page event.");
export const ScreenRequestBody = single.screen.describe("A screen event.");
export const GroupRequestBody = single.group.describe("A group event.");
export const AliasRequestBody = single.alias.describe("An alias event.");
export type IdentifyRequestBody = z.infer<typeof IdentifyRequestBody>;
export type TrackRequestBody = z.infer<typeof TrackRequestBody>;
export type PageRequestBody = z.infer<typeof PageRequestBody>;
export type ScreenRequestBody = z.infer<typeof ScreenRequestBody>;
export type GroupRequestBody = z.infer<typeof GroupRequestBody>;
export type AliasRequestBody = z.infer<typeof AliasRequestBody>;

export const singleEventBodies = {
  identify: IdentifyRequestBody,
  track: TrackRequestBody,
  page: PageRequestBody,
  screen: ScreenRequestBody,
  group: GroupRequestBody,
  alias: AliasRequestBody,
} as const;

/** Every item of a batch carries its own `type`. */
const inBatch = kinds(true);
export const BatchEvent = z
  .discriminatedUnion("type", [inBatch.identify, inBatch.track, inBatch.page, inBatch.screen, inBatch.group, inBatch.alias])
  .describe("One event of a batch; `type` selects its shape.");
export type BatchEvent = z.infer<typeof BatchEvent>;

/** Any single event as accepted on the wire (input side, before defaults). */
export type IngestEvent = z.input<typeof BatchEvent>;

export const BatchRequestBody = z
  .looseObject({
    batch: z.array(BatchEvent).min(1).describe("The events (may mix kinds)."),
    context: JsonObject.optional().describe("Merged under each item's context (the item wins)."),
    integrations: JsonObject.optional(),
    sentAt: Timestamp.optional().describe("When the batch was sent; applies to items without their own sentAt."),
    writeKey: z.string().optional().describe("The write key, as Segment libraries send it."),
  })
  .describe("Several events in one request.");
export type BatchRequestBody = z.infer<typeof BatchRequestBody>;

/** An event as stored and returned by the admin read endpoints. */
export const EventRecord = z.object({
  messageId: z.string(),
  type: EventType,
  userId: z.string().nullable(),
  anonymousId: z.string().nullable(),
  event: z.string().nullable().describe("track: the event name; page/screen: the name."),
  timestamp: z.number().int().describe("Event time, corrected for clock skew (ms since epoch)."),
  receivedAt: z.number().int().describe("When the server received the event (ms since epoch)."),
  payload: JsonObject.describe("The event as received, with batch context merged in."),
});
export type EventRecord = z.infer<typeof EventRecord>;
