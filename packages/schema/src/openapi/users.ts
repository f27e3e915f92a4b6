// Read side of ingested data.
import { EventListQuery, EventListResponse, UserParams, UserQuery, UserResource } from "../users.js";
import { adminErrors, adminKey, json, registry } from "./registry.js";

export function registerUsersPaths() {
  registry.registerPath({
    method: "get",
    path: "/api/admin/users/{userId}",
    tags: ["Users"],
    summary: "Get a user's profile, identities, groups and recent events",
    security: [{ [adminKey.name]: [] }],
    request: { params: UserParams, query: UserQuery },
    responses: { 200: { description: "The user.", ...json(UserResource) }, ...adminErrors("NOT_FOUND") },
  });

  registry.registerPath({
    method: "get",
    path: "/api/admin/events",
    tags: ["Users"],
    summary: "List events, newest first",
    security: [{ [adminKey.name]: [] }],
    request: { query: EventListQuery },
    responses: { 200: { description: "A page of events.", ...json(EventListResponse) }, ...adminErrors() },
  });
}
