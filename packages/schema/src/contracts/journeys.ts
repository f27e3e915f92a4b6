// Journeys: upsert (with draft compilation and validation), list, get, delete.
import {
  JourneyListQuery,
  JourneyListResponse,
  JourneyParams,
  JourneyQuery,
  JourneyResource,
  UpsertJourneyRequestBody,
} from "../journeys.js";
import { adminErrors, defineContract } from "./contract.js";

const tags = ["Journeys"] as const;

export const journeyContracts = [
  defineContract({
    operationId: "journeys.upsert",
    method: "PUT",
    path: "/api/admin/journeys",
    auth: "admin",
    tags,
    summary: "Create or update a journey",
    description: [
      "Upserts by `id` when given, else by (`workspaceId`, `name`).",
      "",
      "A `draft` sent without `definition` is compiled when complete: entry node → steps → exit node, each step's next node found by following its outgoing edge through label and empty nodes (a split's, wait's or cohort's branches start at the label nodes it names). An incomplete draft is stored as is.",
      "",
      "Definitions — sent or compiled — are validated: structure (ids, children, cycles, reachability, cohort percents adding up to 100) and references (segments, message templates and subscription groups of this workspace, template and subscription group of the node's channel). Problems answer 400 with one issue per problem; for a compiled draft the issue paths point into `draft.nodes`.",
      "",
      "Status: `NotStarted` → `Running` ⇄ `Paused`, never back to `NotStarted`; `Running` needs a valid definition whose message templates each have a `definition` (a draft-only template cannot be sent). While running, the journey holds what its definition uses: those segments, templates and subscription groups cannot be deleted, nor changed into something it cannot send (409 naming the journey); pausing releases them, and resuming checks them again.",
    ].join("\n"),
    body: UpsertJourneyRequestBody,
    success: { status: 200, description: "The stored journey.", schema: JourneyResource },
    errors: adminErrors("CONFLICT"),
  }),
  defineContract({
    operationId: "journeys.list",
    method: "GET",
    path: "/api/admin/journeys",
    auth: "admin",
    tags,
    summary: "List journeys, by name",
    query: JourneyListQuery,
    success: { status: 200, description: "A page of journeys.", schema: JourneyListResponse },
    errors: adminErrors(),
  }),
  defineContract({
    operationId: "journeys.get",
    method: "GET",
    path: "/api/admin/journeys/{id}",
    auth: "admin",
    tags,
    summary: "Get a journey",
    params: JourneyParams,
    query: JourneyQuery,
    success: { status: 200, description: "The journey.", schema: JourneyResource },
    errors: adminErrors("NOT_FOUND"),
  }),
  defineContract({
    operationId: "journeys.delete",
    method: "DELETE",
    path: "/api/admin/journeys/{id}",
    auth: "admin",
    tags,
    summary: "Delete a journey (pause a running journey first)",
    params: JourneyParams,
    query: JourneyQuery,
    success: { status: 204, description: "Deleted." },
    errors: adminErrors("NOT_FOUND", "CONFLICT"),
  }),
] as const;
