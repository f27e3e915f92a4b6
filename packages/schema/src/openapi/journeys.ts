// Journeys: upsert (with draft compilation and validation), list, get, delete.
import {
  JourneyListQuery,
  JourneyListResponse,
  JourneyParams,
  JourneyQuery,
  JourneyResource,
  UpsertJourneyRequestBody,
} from "../journeys.js";
import { adminErrors, adminSecurity, json, registry } from "./registry.js";

export function registerJourneysPaths() {
  registry.registerPath({
    method: "put",
    path: "/api/admin/journeys",
    tags: ["Journeys"],
    summary: "Create or update a journey",
    description: [
      "Upserts by `id` when given, else by (`workspaceId`, `name`).",
      "",
      "A `draft` sent without `definition` is compiled when complete: entry node → steps → exit node, each step's next node found by following its outgoing edge through label and empty nodes (a split's, wait's or cohort's branches start at the label nodes it names). An incomplete draft is stored as is.",
      "",
      "Definitions — sent or compiled — are validated: structure (ids, children, cycles, reachability, cohort percents adding up to 100) and references (segments, message templates and subscription groups of this workspace, template and subscription group of the node's channel). Problems answer 400 with one issue per problem; for a compiled draft the issue paths point into `draft.nodes`.",
      "",
      "Status: `NotStarted` → `Running` ⇄ `Paused`, never back to `NotStarted`; `Running` needs a valid definition.",
    ].join("\n"),
    security: adminSecurity,
    request: { body: json(UpsertJourneyRequestBody) },
    responses: {
      200: { description: "The stored journey.", ...json(JourneyResource) },
      ...adminErrors("CONFLICT"),
    },
  });

  registry.registerPath({
    method: "get",
    path: "/api/admin/journeys",
    tags: ["Journeys"],
    summary: "List journeys, by name",
    security: adminSecurity,
    request: { query: JourneyListQuery },
    responses: { 200: { description: "A page of journeys.", ...json(JourneyListResponse) }, ...adminErrors() },
  });

  registry.registerPath({
    method: "get",
    path: "/api/admin/journeys/{id}",
    tags: ["Journeys"],
    summary: "Get a journey",
    security: adminSecurity,
    request: { params: JourneyParams, query: JourneyQuery },
    responses: { 200: { description: "The journey.", ...json(JourneyResource) }, ...adminErrors("NOT_FOUND") },
  });

  registry.registerPath({
    method: "delete",
    path: "/api/admin/journeys/{id}",
    tags: ["Journeys"],
    summary: "Delete a journey (pause a running journey first)",
    security: adminSecurity,
    request: { params: JourneyParams, query: JourneyQuery },
    responses: {
      204: { description: "Deleted." },
      ...adminErrors("NOT_FOUND", "CONFLICT"),
    },
  });
}
