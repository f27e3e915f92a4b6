// Apply: several stored definitions (subscription groups, segments, templates, journeys) written
// in one transaction — all or nothing — or, with `dryRun`, checked the same way and rolled back.
import { z } from "./zod.js";
import { UpsertJourneyRequestBody } from "./journeys.js";
import { PoliciesBody } from "./policies.js";
import { UpsertSegmentRequestBody } from "./segments.js";
import { UpsertSubscriptionGroupRequestBody } from "./subscription-groups.js";
import { UpsertMessageTemplateRequestBody } from "./templates.js";

export const ApplyKind = z
  .enum(["SubscriptionGroup", "Segment", "Template", "Journey", "Policies"])
  .describe(
    "The kind of a resource, in the order apply writes them: what a later kind may reference comes first. `Policies`: the workspace's delivery policies (at most one; reported under the name `policies` and the workspace's id).",
  );
export type ApplyKind = z.infer<typeof ApplyKind>;

const item = <K extends ApplyKind, B extends z.ZodType>(kind: K, resource: B, upsert: string) =>
  z.strictObject({
    kind: z.literal(kind),
    resource: resource.describe(`The body ${upsert} takes.`),
  });

export const ApplyRequestItem = z
  .discriminatedUnion("kind", [
    item("SubscriptionGroup", UpsertSubscriptionGroupRequestBody, "PUT /api/admin/subscription-groups"),
    item("Segment", UpsertSegmentRequestBody, "PUT /api/admin/segments"),
    item("Template", UpsertMessageTemplateRequestBody, "PUT /api/admin/templates"),
    item("Journey", UpsertJourneyRequestBody, "PUT /api/admin/journeys"),
    item("Policies", PoliciesBody, "PUT /api/admin/policies"),
  ])
  .describe("One resource and its kind.");
export type ApplyRequestItem = z.infer<typeof ApplyRequestItem>;

export const ApplyRequestBody = z
  .strictObject({
    resources: z.array(ApplyRequestItem).min(1).max(500).describe("What to write (at most 500)."),
    dryRun: z
      .boolean()
      .optional()
      .describe("Check and report everything as a real apply would, then roll back: nothing is written. Default false."),
  })
  .describe("Resources to create or update together.");
export type ApplyRequestBody = z.infer<typeof ApplyRequestBody>;

export const ApplyResult = z
  .enum(["created", "updated", "unchanged"])
  .describe("`unchanged`: the stored resource already had every field the request gives, so nothing was written.");
export type ApplyResult = z.infer<typeof ApplyResult>;

export const ApplyResponseItem = z
  .object({
    kind: ApplyKind,
    name: z.string(),
    id: z
      .uuid()
      .optional()
      .describe(
        "The resource's id; absent in a dry run for a resource that would be created without an `id` (its id is chosen when it is).",
      ),
    result: ApplyResult,
    warnings: z
      .array(z.object({ path: z.string(), message: z.string() }))
      .optional()
      .describe(
        "What was written but may not work as is (a template's webhook `url` the send-time guard refuses, or whose host name did not resolve), as the resource's own PUT answers it.",
      ),
  })
  .describe("What became (or, in a dry run, would become) of one resource.");
export type ApplyResponseItem = z.infer<typeof ApplyResponseItem>;

export const ApplyResponse = z
  .object({
    dryRun: z.boolean().describe("True when nothing was written."),
    resources: z.array(ApplyResponseItem).describe("One entry per requested resource, in the request's order."),
  })
  .openapi("ApplyResponse");
export type ApplyResponse = z.infer<typeof ApplyResponse>;
