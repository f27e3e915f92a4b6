// Broadcasts (one-off sends to an audience) and deliveries (one row per send attempt's outcome).
import { z } from "./zod.js";
import { MessageCategory } from "./categories.js";
import { EpochMillis, idParams, ListQuery, listResponse, RequestWorkspaceId, WorkspaceId, WorkspaceQuery } from "./common.js";
import { SegmentDefinition } from "./segments.js";
import { Channel } from "./subscription-groups.js";
import { MessageTemplateDefinition } from "./templates.js";

export const BroadcastStatus = z
  .enum(["Queued", "Running", "Completed", "Failed", "Cancelled"])
  .describe(
    "`Queued` until a worker has frozen the whole audience (the first 1 000 members' messages already go out meanwhile; `startedAt` is set), `Running` while sending the rest, then `Completed`, `Failed` or `Cancelled`.",
  );
export type BroadcastStatus = z.infer<typeof BroadcastStatus>;

export const ExecuteBroadcastRequestBody = z
  .strictObject({
    workspaceId: RequestWorkspaceId,
    broadcastName: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .describe(
        "Idempotency key within the workspace: a repeat with the same body returns the same broadcast and sends nothing new; a different body is a 409.",
      ),
    segmentDefinition: SegmentDefinition.optional().describe(
      "Inline audience, evaluated once when the broadcast starts. Give this or `segmentId`.",
    ),
    segmentId: z.uuid().optional().describe("A stored segment: its members when the broadcast starts. Give this or `segmentDefinition`."),
    messageTemplateDefinition: MessageTemplateDefinition.optional().describe(
      "Inline message template; its `type` is the channel. Give this or `templateId`.",
    ),
    templateId: z.uuid().optional().describe("A stored template (its `definition`). Give this or `messageTemplateDefinition`."),
    subscriptionGroupId: z
      .uuid()
      .optional()
      .describe(
        "Send within this subscription group: OptOut groups skip users who unsubscribed, OptIn groups send only to subscribers; emails carry its unsubscribe link and List-Unsubscribe headers.",
      ),
    rateLimitPerSecond: z
      .number()
      .int()
      .min(1)
      .max(100_000)
      .optional()
      .describe("At most this many messages per second for this broadcast."),
    category: MessageCategory.optional().describe("The messages' category for delivery policies (default: the template's)."),
    sendAtLocalTime: z
      .string()
      .regex(/^(?:[01]\d|2[0-3]):[0-5]\d$/, "a local time `HH:MM`")
      .optional()
      .describe(
        "Send each member's message at this time of day in the member's zone (`timezone` trait, else the delivery policies' `defaultTimezone`, else UTC) rather than at once. Send windows still hold it.",
      ),
    ifLocalTimePassed: z
      .enum(["tomorrow", "now"])
      .optional()
      .describe("With `sendAtLocalTime`: a member whose time has already passed today gets it tomorrow (default), or at once (`now`)."),
  })
  .superRefine((body, ctx) => {
    const exactlyOne = (a: "segmentDefinition" | "messageTemplateDefinition", b: "segmentId" | "templateId") => {
      const n = Number(body[a] !== undefined) + Number(body[b] !== undefined);
      if (n !== 1) ctx.addIssue({ code: "custom", path: [n ? b : a], message: `give exactly one of \`${a}\` and \`${b}\`` });
    };
    exactlyOne("segmentDefinition", "segmentId");
    exactlyOne("messageTemplateDefinition", "templateId");
    if (body.ifLocalTimePassed !== undefined && body.sendAtLocalTime === undefined)
      ctx.addIssue({ code: "custom", path: ["ifLocalTimePassed"], message: "only with `sendAtLocalTime`" });
  })
  .describe("Sends one message to each member of an audience, once.");
export type ExecuteBroadcastRequestBody = z.infer<typeof ExecuteBroadcastRequestBody>;

export const ExecuteBroadcastResponse = z.object({
  broadcastId: z.uuid(),
  broadcastName: z.string(),
  status: BroadcastStatus,
  repeat: z
    .boolean()
    .optional()
    .describe("True when a broadcast of this name had already been executed: the answer is that broadcast, and nothing new is sent."),
  createdAt: EpochMillis.optional().describe("When the broadcast was first executed."),
});
export type ExecuteBroadcastResponse = z.infer<typeof ExecuteBroadcastResponse>;

export const BroadcastCounts = z.object({
  audience: z.number().int().describe("Members when the broadcast started (one delivery each)."),
  sent: z.number().int(),
  failed: z.number().int(),
  skipped: z.number().int().describe("Unsubscribed, not subscribed, without the channel's contact point, or cancelled before sending."),
  pending: z.number().int().describe("Not yet sent (queued, waiting for a retry, deferred by a delivery policy, or in flight)."),
  deferred: z
    .number()
    .int()
    .optional()
    .describe("Of `pending`: held by a delivery policy until their `notBefore` (absent from servers before delivery policies)."),
});

export const BroadcastResource = z
  .object({
    id: z.uuid(),
    workspaceId: WorkspaceId,
    name: z.string(),
    status: BroadcastStatus,
    channel: Channel,
    segmentId: z.uuid().optional(),
    templateId: z.uuid().optional(),
    subscriptionGroupId: z.uuid().optional(),
    rateLimitPerSecond: z.number().int().optional(),
    category: MessageCategory.optional(),
    counts: BroadcastCounts,
    reason: z.string().optional().describe("Why the broadcast failed."),
    createdAt: EpochMillis,
    startedAt: EpochMillis.optional(),
    completedAt: EpochMillis.optional().describe("When it completed, failed or was cancelled."),
  })
  .openapi("Broadcast");
export type BroadcastResource = z.infer<typeof BroadcastResource>;

export const BroadcastParams = idParams("Broadcast");
export const BroadcastQuery = WorkspaceQuery;
export const BroadcastListQuery = ListQuery;
export const BroadcastListResponse = listResponse("broadcasts", BroadcastResource);
export type BroadcastListResponse = z.infer<typeof BroadcastListResponse>;

export const DeliveryStatus = z
  .enum(["Queued", "Sending", "Sent", "Failed", "Skipped", "Deferred"])
  .describe(
    "`Sending`: claimed, the provider is being called. `Deferred`: held by a delivery policy (the reason names the rule) until `notBefore`, when its eligibility is checked again.",
  );
export type DeliveryStatus = z.infer<typeof DeliveryStatus>;

export const DeliveryRecord = z
  .object({
    id: z.uuid().describe("Also the idempotency key providers see (the webhook's `webhook-id`)."),
    workspaceId: WorkspaceId,
    userId: z.string(),
    channel: Channel,
    templateId: z.uuid().optional(),
    broadcastId: z.uuid().optional().describe("Source: the broadcast this member's message belongs to (unique per broadcast and user)."),
    journeyId: z.uuid().optional().describe("Source: the journey of the run that sent it (with `runId` and `nodeId`)."),
    runId: z.uuid().optional().describe("Source: the journey run (unique per run and message node)."),
    nodeId: z.string().optional().describe("Source: the journey's message node."),
    status: DeliveryStatus,
    reason: z.string().optional().describe("Why it failed, was skipped or is deferred (naming the rule)."),
    notBefore: EpochMillis.optional().describe(
      "`Deferred`: when it may go (the rule's next opening, or when its cap has room). `Queued`: when it is due, if later than now (a retry's backoff, a local-time broadcast).",
    ),
    category: MessageCategory.optional().describe(
      "The category the delivery policies saw (the broadcast's or node's, else the template's).",
    ),
    timezone: z.string().optional().describe("The zone the delivery policies used for this user, once they looked at it."),
    timezoneSource: z
      .enum(["trait", "workspace", "utc", "invalid-trait"])
      .optional()
      .describe(
        "Where `timezone` came from: the user's `timezone` trait, the workspace's default zone, or neither (UTC). `invalid-trait`: the user's `timezone` trait is not a zone, so the workspace's default (else UTC) was used; a held message's reason names the trait's value.",
      ),
    providerMessageId: z.string().optional(),
    attempts: z.number().int(),
    createdAt: EpochMillis,
    updatedAt: EpochMillis,
    contact: z.string().optional().describe("With `include=content`: the contact point the message went to (email, phone, token, URL)."),
    rendered: z
      .record(z.string(), z.unknown())
      .optional()
      .describe("With `include=content`: the rendered message as handed to the provider (the `Log` provider only records it)."),
  })
  .openapi("Delivery");
export type DeliveryRecord = z.infer<typeof DeliveryRecord>;

export const DeliveryListQuery = ListQuery.extend({
  userId: z.string().min(1).max(255).optional().describe("Only this user's deliveries (any of its ids)."),
  broadcastId: z.uuid().optional(),
  journeyId: z.uuid().optional(),
  runId: z.uuid().optional().describe("Only this journey run's deliveries."),
  channel: Channel.optional(),
  status: DeliveryStatus.optional(),
  since: z.coerce.number().int().optional().describe("Created at or after (ms since epoch)."),
  until: z.coerce.number().int().optional().describe("Created before (ms since epoch)."),
  include: z
    .enum(["content"])
    .optional()
    .describe("`content`: each delivery also carries its `contact` and `rendered` message (personal data; absent once erased)."),
});
export type DeliveryListQuery = z.infer<typeof DeliveryListQuery>;
export const DeliveryListResponse = listResponse("deliveries", DeliveryRecord);
export const DeliveryParams = idParams("Delivery");
export const DeliveryQuery = WorkspaceQuery;
export type DeliveryListResponse = z.infer<typeof DeliveryListResponse>;

export const UnsubscribeQuery = z.object({ token: z.string().min(1).max(4000).describe("The signed token of the unsubscribe link.") });
