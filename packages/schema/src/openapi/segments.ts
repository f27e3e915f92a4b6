// Segments and their hand-set members.
import {
  SegmentListQuery,
  SegmentListResponse,
  SegmentMembersRequestBody,
  SegmentMembersResponse,
  SegmentParams,
  SegmentQuery,
  SegmentResource,
  SegmentUsersQuery,
  SegmentUsersResponse,
  UpsertSegmentRequestBody,
} from "../segments.js";
import { adminErrors, adminSecurity, json, registry } from "./registry.js";

export function registerSegmentsPaths() {
  registry.registerPath({
    method: "put",
    path: "/api/admin/segments",
    tags: ["Segments"],
    summary: "Create or update a segment",
    description: [
      "Upserts by `id` when given (an id not yet in the workspace creates the segment with that id), else by (`workspaceId`, `name`); answers 200 with the stored segment.",
      "A segment created without `definition` is a manual segment (`entryNode` of type `Manual`); set its members with PUT /api/admin/segments/{id}/members.",
      "On update, an omitted `definition` or `subscriptionGroupId` keeps the stored value. `definitionUpdatedAt` moves only when the definition changes; `createdAt`, `updatedAt`, `definitionUpdatedAt` and `lastRecomputed` in the body are ignored.",
      "400 when the definition is invalid (issues name the field, e.g. `definition.nodes.2.children.1` for an unknown child id) or a subscription group it names does not exist; 409 when renaming onto the name of another segment.",
    ].join("\n\n"),
    security: adminSecurity,
    request: { body: json(UpsertSegmentRequestBody) },
    responses: { 200: { description: "The stored segment.", ...json(SegmentResource) }, ...adminErrors("CONFLICT") },
  });

  registry.registerPath({
    method: "get",
    path: "/api/admin/segments",
    tags: ["Segments"],
    summary: "List segments, ordered by name then id",
    security: adminSecurity,
    request: { query: SegmentListQuery },
    responses: { 200: { description: "A page of segments.", ...json(SegmentListResponse) }, ...adminErrors() },
  });

  registry.registerPath({
    method: "get",
    path: "/api/admin/segments/{id}",
    tags: ["Segments"],
    summary: "Get a segment",
    security: adminSecurity,
    request: { params: SegmentParams, query: SegmentQuery },
    responses: { 200: { description: "The segment.", ...json(SegmentResource) }, ...adminErrors("NOT_FOUND") },
  });

  registry.registerPath({
    method: "delete",
    path: "/api/admin/segments/{id}",
    tags: ["Segments"],
    summary: "Delete a segment and its hand-set members",
    description: "409 while a running journey uses the segment.",
    security: adminSecurity,
    request: { params: SegmentParams, query: SegmentQuery },
    responses: { 204: { description: "Deleted." }, ...adminErrors("NOT_FOUND", "CONFLICT") },
  });

  registry.registerPath({
    method: "put",
    path: "/api/admin/segments/{id}/members",
    tags: ["Segments"],
    summary: "Add or remove hand-set members",
    description:
      "Only for a segment whose definition has a `Manual` node (a segment created without a definition has one); other segments answer 409. User ids are resolved through identity links (an anonymousId linked to a user adds that user). Users need not have sent events yet. A user may not be in both `add` and `remove` (400). Answers with counts.",
    security: adminSecurity,
    request: { params: SegmentParams, body: json(SegmentMembersRequestBody) },
    responses: {
      200: { description: "What changed and the resulting member count.", ...json(SegmentMembersResponse) },
      ...adminErrors("NOT_FOUND", "CONFLICT"),
    },
  });

  registry.registerPath({
    method: "get",
    path: "/api/admin/segments/{id}/users",
    tags: ["Segments"],
    summary: "List the segment's members, ordered by user id",
    description:
      "Lists the hand-set members of a segment whose definition has a `Manual` node. Membership computed from other node types arrives with the segment engine; until then such segments list no users.",
    security: adminSecurity,
    request: { params: SegmentParams, query: SegmentUsersQuery },
    responses: { 200: { description: "A page of members.", ...json(SegmentUsersResponse) }, ...adminErrors("NOT_FOUND") },
  });
}
