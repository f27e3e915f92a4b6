// Delivery policies: one document per workspace, read and replaced whole.
import { WorkspaceQuery } from "../common.js";
import { PoliciesBody, PoliciesResource } from "../policies.js";
import { adminErrors, defineContract } from "./contract.js";

const tags = ["Delivery policies"] as const;

export const policyContracts = [
  defineContract({
    operationId: "policies.get",
    method: "GET",
    path: "/api/admin/policies",
    auth: "admin",
    tags,
    summary: "Get the workspace's delivery policies",
    description: "Frequency caps, send windows, provider rates, time-to-live and the default time zone; empty lists until set.",
    query: WorkspaceQuery,
    success: { status: 200, description: "The policies.", schema: PoliciesResource },
    errors: adminErrors(),
  }),
  defineContract({
    operationId: "policies.put",
    method: "PUT",
    path: "/api/admin/policies",
    auth: "admin",
    tags,
    summary: "Replace the workspace's delivery policies",
    description:
      "Every list is replaced in full (an omitted list is emptied). The rules apply to messages claimed from now on, including ones already deferred: a deferred message is decided again when its time comes. A message in scope of a rule is held (`Deferred`, with the rule's name and `notBefore`) or, with `action: skip`, `Skipped`; `transactional` messages only by rules that name that category. Several rules combine: the latest `notBefore` wins.",
    body: PoliciesBody,
    success: { status: 200, description: "The stored policies.", schema: PoliciesResource },
    errors: adminErrors(),
  }),
];
