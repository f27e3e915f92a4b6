// The admin API keys and write keys of the caller's workspace.
import type { ErrorCode } from "../errors.js";
import { ApiKeyListResponse, ApiKeyParams, ApiKeyQuery, CreateApiKeyRequestBody, CreatedApiKeyResponse } from "../workspaces.js";
import { adminErrors, defineContract } from "./contract.js";

const tags = ["Keys"] as const;

/** Create, list and revoke for one kind of key; `ns` prefixes the operationIds. */
function keysOf<const Ns extends string, const P extends string>(
  ns: Ns,
  path: P,
  kind: string,
  revoke: { description: string; errors: readonly ErrorCode[] },
) {
  return [
    defineContract({
      operationId: `${ns}.create` as `${Ns}.create`,
      method: "POST",
      path,
      auth: "admin",
      tags,
      summary: `Create a ${kind}`,
      body: CreateApiKeyRequestBody,
      success: { status: 201, description: "Created; `key` is shown only here.", schema: CreatedApiKeyResponse },
      errors: adminErrors(),
    }),
    defineContract({
      operationId: `${ns}.list` as `${Ns}.list`,
      method: "GET",
      path,
      auth: "admin",
      tags,
      summary: `List ${kind}s (without the keys themselves)`,
      query: ApiKeyQuery,
      success: { status: 200, description: "The keys.", schema: ApiKeyListResponse },
      errors: adminErrors(),
    }),
    defineContract({
      operationId: `${ns}.revoke` as `${Ns}.revoke`,
      method: "DELETE",
      path: `${path}/{id}` as `${P}/{id}`,
      auth: "admin",
      tags,
      summary: `Revoke a ${kind}`,
      description: revoke.description,
      params: ApiKeyParams,
      query: ApiKeyQuery,
      success: { status: 204, description: "Revoked." },
      errors: revoke.errors,
    }),
  ] as const;
}

export const keyContracts = [
  ...keysOf("apiKeys", "/api/admin/api-keys", "admin API key", {
    description:
      "Revoking an already revoked key changes nothing (204). The last active admin API key of a workspace cannot be revoked (409): create another one first, so the workspace never locks itself out.",
    errors: adminErrors("NOT_FOUND", "CONFLICT"),
  }),
  ...keysOf("writeKeys", "/api/admin/write-keys", "write key", {
    description: "Revoking an already revoked key changes nothing (204).",
    errors: adminErrors("NOT_FOUND"),
  }),
] as const;
