// Subscription groups: per-channel lists users opt into (OptIn) or out of (OptOut), and the
// users' explicit choices (assignments).
import { z } from "./zod.js";
import {
  EpochMillis,
  idParams,
  ListQuery,
  listResponse,
  RequestWorkspaceId,
  resourceName,
  serverManagedFields,
  UserIdList,
  WorkspaceId,
  WorkspaceQuery,
} from "./common.js";

export const Channel = z.enum(["Email", "Sms", "MobilePush", "Webhook"]).describe("Delivery channel.");
export type Channel = z.infer<typeof Channel>;

export const SubscriptionGroupType = z
  .enum(["OptIn", "OptOut"])
  .describe("`OptIn`: users receive messages only once subscribed. `OptOut`: users receive them until they unsubscribe.");
export type SubscriptionGroupType = z.infer<typeof SubscriptionGroupType>;

export const SubscriptionGroupResource = z
  .object({
    id: z.uuid(),
    workspaceId: WorkspaceId,
    name: z.string(),
    channel: Channel,
    type: SubscriptionGroupType,
    createdAt: EpochMillis,
    updatedAt: EpochMillis.describe("Last change of any field (ms since epoch)."),
  })
  .openapi("SubscriptionGroup");
export type SubscriptionGroupResource = z.infer<typeof SubscriptionGroupResource>;

export const UpsertSubscriptionGroupRequestBody = z
  .strictObject({
    id: z
      .uuid()
      .optional()
      .describe("Upsert key. When given, the group with this id is updated, or created with this id; else `name` is the key."),
    workspaceId: RequestWorkspaceId,
    name: resourceName("Unique within the workspace; renaming onto another group's name is a 409."),
    channel: Channel,
    type: SubscriptionGroupType,
    ...serverManagedFields,
  })
  .describe("Creates or updates a subscription group.");
export type UpsertSubscriptionGroupRequestBody = z.infer<typeof UpsertSubscriptionGroupRequestBody>;

export const SubscriptionGroupParams = idParams("Subscription group");
export const SubscriptionGroupQuery = WorkspaceQuery;

export const SubscriptionGroupListQuery = ListQuery;
export type SubscriptionGroupListQuery = z.infer<typeof SubscriptionGroupListQuery>;

export const SubscriptionGroupListResponse = listResponse("subscriptionGroups", SubscriptionGroupResource);
export type SubscriptionGroupListResponse = z.infer<typeof SubscriptionGroupListResponse>;

export const SubscriptionAssignmentsRequestBody = z
  .strictObject({
    workspaceId: RequestWorkspaceId,
    subscribe: UserIdList.optional().describe("User ids (or linked anonymousIds) to subscribe; at most 1000."),
    unsubscribe: UserIdList.optional().describe("User ids (or linked anonymousIds) to unsubscribe; at most 1000."),
  })
  .describe("Records users' explicit choices; a user may appear in only one of the lists.");
export type SubscriptionAssignmentsRequestBody = z.infer<typeof SubscriptionAssignmentsRequestBody>;

export const SubscriptionAssignmentsResponse = z.object({
  subscribed: z.number().int().describe("Users now recorded as subscribed by this request."),
  unsubscribed: z.number().int().describe("Users now recorded as unsubscribed by this request."),
});
export type SubscriptionAssignmentsResponse = z.infer<typeof SubscriptionAssignmentsResponse>;

export const SubscriptionAssignment = z.object({
  userId: z.string().describe("Canonical user id (aliases are resolved when assigned)."),
  subscribed: z.boolean(),
  updatedAt: EpochMillis.describe("When the choice was last recorded."),
});
export type SubscriptionAssignment = z.infer<typeof SubscriptionAssignment>;

export const SubscriptionAssignmentListQuery = ListQuery;
export type SubscriptionAssignmentListQuery = z.infer<typeof SubscriptionAssignmentListQuery>;

export const SubscriptionAssignmentListResponse = listResponse("assignments", SubscriptionAssignment);
export type SubscriptionAssignmentListResponse = z.infer<typeof SubscriptionAssignmentListResponse>;
