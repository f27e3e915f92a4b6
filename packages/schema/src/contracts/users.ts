// Read side of ingested data: a user's profile and the event log.
import { EventListQuery, EventListResponse, UserListQuery, UserListResponse, UserParams, UserQuery, UserResource } from "../users.js";
import { adminErrors, defineContract } from "./contract.js";

const tags = ["Users"] as const;

export const userContracts = [
  defineContract({
    operationId: "users.get",
    method: "GET",
    path: "/api/admin/users/{userId}",
    auth: "admin",
    tags,
    summary: "Get a user's profile, identities, groups, segments, recent events and journey runs",
    params: UserParams,
    query: UserQuery,
    success: { status: 200, description: "The user.", schema: UserResource },
    errors: adminErrors("NOT_FOUND"),
  }),
  defineContract({
    operationId: "users.list",
    method: "GET",
    path: "/api/admin/users",
    auth: "admin",
    tags,
    summary: "List users, ordered by user id",
    description: "With `segmentId`, only the segment's current members, each with `enteredAt` (404 if the segment does not exist).",
    query: UserListQuery,
    success: { status: 200, description: "A page of users.", schema: UserListResponse },
    errors: adminErrors("NOT_FOUND"),
  }),
  defineContract({
    operationId: "users.delete",
    method: "DELETE",
    path: "/api/admin/users/{userId}",
    auth: "admin",
    tags,
    summary: "Erase a user",
    description:
      "Erases the profile, every event sent under any of its ids, its identity links, group memberships, subscription choices, hand-set and computed segment memberships (an exit is not recorded: the user is gone), and the personal data of its deliveries (contact point, rendered message; the user id becomes `erased:<delivery id>`, so broadcast counts stay), and of its journey runs (the user id becomes `erased:<run id>` and the event is dropped; an active run ends as `Ended`, so journey stats stay). `userId` may be any of the user's ids.",
    params: UserParams,
    query: UserQuery,
    success: { status: 204, description: "Erased." },
    errors: adminErrors("NOT_FOUND"),
  }),
  defineContract({
    operationId: "events.list",
    method: "GET",
    path: "/api/admin/events",
    auth: "admin",
    tags,
    summary: "List events, newest first (by event time, or by receipt with order=received)",
    query: EventListQuery,
    success: { status: 200, description: "A page of events.", schema: EventListResponse },
    errors: adminErrors(),
  }),
] as const;
