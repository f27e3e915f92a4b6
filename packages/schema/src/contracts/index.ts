// Every operation of the HTTP API, as a list and by operationId. The server registers one route
// per contract, /openapi.json documents each one, and clients derive their typed calls from them.
import { applyContracts } from "./apply.js";
import type { Contract } from "./contract.js";
import { ingestContracts } from "./ingest.js";
import { journeyContracts } from "./journeys.js";
import { keyContracts } from "./keys.js";
import { messagingContracts } from "./messaging.js";
import { operationContracts } from "./operations.js";
import { policyContracts } from "./policies.js";
import { providerContracts } from "./providers.js";
import { segmentContracts } from "./segments.js";
import { subscriptionGroupContracts } from "./subscription-groups.js";
import { templateContracts } from "./templates.js";
import { userContracts } from "./users.js";
import { workspaceContracts } from "./workspaces.js";

export * from "./contract.js";

/** Every operation, in the order the OpenAPI document lists them. */
export const contracts = [
  ...ingestContracts,
  ...workspaceContracts,
  ...keyContracts,
  ...userContracts,
  ...segmentContracts,
  ...subscriptionGroupContracts,
  ...journeyContracts,
  ...templateContracts,
  ...providerContracts,
  ...applyContracts,
  ...messagingContracts,
  ...policyContracts,
  ...operationContracts,
] as const satisfies readonly Contract[];

export type AnyContract = (typeof contracts)[number];
export type OperationId = AnyContract["operationId"];
/** The contract of one operation, with its literal types. */
export type ContractOf<Id extends OperationId> = Extract<AnyContract, { operationId: Id }>;

/** Every contract by its operationId (unique; a test checks it). */
export const contractsById = Object.fromEntries(contracts.map((c) => [c.operationId, c])) as {
  readonly [Id in OperationId]: ContractOf<Id>;
};
