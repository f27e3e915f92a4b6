// Read side of ingested data: a user's profile and the event log.
import { EventListQuery, EventListResponse, UserParams, UserQuery, UserResource } from "../users.js";
import { adminErrors, defineContract } from "./contract.js";

const tags = ["Users"] as const;

export const userContracts = [
  defineContract({
    operationId: "users.get",
    method: "GET",
    path: "/api/admin/users/{userId}",
    auth: "admin",
    tags,
    summary: "Get a user's profile, identities, groups and recent events",
    params: UserParams,
    query: UserQuery,
    success: { status: 200, description: "The user.", schema: UserResource },
    errors: adminErrors("NOT_FOUND"),
  }),
  defineContract({
    operationId: "events.list",
    method: "GET",
    path: "/api/admin/events",
    auth: "admin",
    tags,
    summary: "List events, newest first",
    query: EventListQuery,
    success: { status: 200, description: "A page of events.", schema: EventListResponse },
    errors: adminErrors(),
  }),
] as const;
