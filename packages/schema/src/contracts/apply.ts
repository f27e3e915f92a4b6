// Apply: subscription groups, segments, templates and journeys written together, or checked (dry run).
import { ApplyRequestBody, ApplyResponse } from "../apply.js";
import { adminErrors, defineContract } from "./contract.js";

export const applyContracts = [
  defineContract({
    operationId: "resources.apply",
    method: "POST",
    path: "/api/admin/apply",
    auth: "admin",
    tags: ["Apply"],
    summary: "Create or update several resources at once (all or nothing), or check them (dry run)",
    description: [
      "Writes subscription groups, segments, templates and journeys in one transaction, in that order whatever the request's order (a segment may name a group the same request creates, a journey the segments and templates it creates). Each resource is upserted exactly as its own PUT route does it (keyed by `id` when given, else by name; omitted fields keep their stored values; a resource whose fields all equal the stored ones is `unchanged` and not written).",
      'All or nothing: when one resource is refused, nothing is written and the error names it — its message starts with `resources.<index> (<kind> "<name>")` and its issue paths with `resources.<index>.resource`.',
      "With `dryRun: true` every check runs as it would (unknown references, a name that belongs to another resource, a journey's definition) and the transaction is rolled back: the answer is the plan, or the error the real apply would get. This is the server-side dry run of `tidings apply --dry-run`.",
      "409 when a name belongs to another resource: an `id` whose resource does not exist while another one holds the name (drop `id` to update that one, or choose another name), or a rename onto a taken name.",
    ].join("\n\n"),
    body: ApplyRequestBody,
    success: { status: 200, description: "What became of each resource (or would, in a dry run).", schema: ApplyResponse },
    errors: adminErrors("CONFLICT"),
  }),
] as const;
