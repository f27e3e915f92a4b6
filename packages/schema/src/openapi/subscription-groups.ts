// Subscription groups and users' assignments to them.
import {
  SubscriptionAssignmentListQuery,
  SubscriptionAssignmentListResponse,
  SubscriptionAssignmentsRequestBody,
  SubscriptionAssignmentsResponse,
  SubscriptionGroupListQuery,
  SubscriptionGroupListResponse,
  SubscriptionGroupParams,
  SubscriptionGroupQuery,
  SubscriptionGroupResource,
  UpsertSubscriptionGroupRequestBody,
} from "../subscription-groups.js";
import { adminErrors, adminSecurity, json, registry } from "./registry.js";

export function registerSubscriptionGroupsPaths() {
  registry.registerPath({
    method: "put",
    path: "/api/admin/subscription-groups",
    tags: ["Subscription groups"],
    summary: "Create or update a subscription group",
    description:
      "Upserts by `id` when given (an id not yet in the workspace creates the group with that id), else by (`workspaceId`, `name`); answers 200 with the stored group. `createdAt` and `updatedAt` in the body are ignored. 409 when renaming onto the name of another group.",
    security: adminSecurity,
    request: { body: json(UpsertSubscriptionGroupRequestBody) },
    responses: { 200: { description: "The stored group.", ...json(SubscriptionGroupResource) }, ...adminErrors("CONFLICT") },
  });

  registry.registerPath({
    method: "get",
    path: "/api/admin/subscription-groups",
    tags: ["Subscription groups"],
    summary: "List subscription groups, ordered by name then id",
    security: adminSecurity,
    request: { query: SubscriptionGroupListQuery },
    responses: { 200: { description: "A page of groups.", ...json(SubscriptionGroupListResponse) }, ...adminErrors() },
  });

  registry.registerPath({
    method: "get",
    path: "/api/admin/subscription-groups/{id}",
    tags: ["Subscription groups"],
    summary: "Get a subscription group",
    security: adminSecurity,
    request: { params: SubscriptionGroupParams, query: SubscriptionGroupQuery },
    responses: { 200: { description: "The group.", ...json(SubscriptionGroupResource) }, ...adminErrors("NOT_FOUND") },
  });

  registry.registerPath({
    method: "delete",
    path: "/api/admin/subscription-groups/{id}",
    tags: ["Subscription groups"],
    summary: "Delete a subscription group and its assignments",
    description: "409 while a segment names the group (its `subscriptionGroupId` or a `SubscriptionGroup` node) or a running journey uses it.",
    security: adminSecurity,
    request: { params: SubscriptionGroupParams, query: SubscriptionGroupQuery },
    responses: { 204: { description: "Deleted." }, ...adminErrors("NOT_FOUND", "CONFLICT") },
  });

  registry.registerPath({
    method: "put",
    path: "/api/admin/subscription-groups/{id}/assignments",
    tags: ["Subscription groups"],
    summary: "Subscribe or unsubscribe users",
    description:
      "Records each user's explicit choice (a later call overrides it). User ids are resolved through identity links; users need not have sent events yet. A user may not be in both lists (400). Users without a recorded choice get the group type's default: subscribed for `OptOut`, not subscribed for `OptIn`.",
    security: adminSecurity,
    request: { params: SubscriptionGroupParams, body: json(SubscriptionAssignmentsRequestBody) },
    responses: {
      200: { description: "How many users were recorded each way.", ...json(SubscriptionAssignmentsResponse) },
      ...adminErrors("NOT_FOUND"),
    },
  });

  registry.registerPath({
    method: "get",
    path: "/api/admin/subscription-groups/{id}/assignments",
    tags: ["Subscription groups"],
    summary: "List users' explicit choices, ordered by user id",
    security: adminSecurity,
    request: { params: SubscriptionGroupParams, query: SubscriptionAssignmentListQuery },
    responses: {
      200: { description: "A page of assignments.", ...json(SubscriptionAssignmentListResponse) },
      ...adminErrors("NOT_FOUND"),
    },
  });
}
