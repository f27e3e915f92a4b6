// Workspaces and their keys.
import {
  ApiKeyListResponse,
  ApiKeyParams,
  ApiKeyQuery,
  CreateApiKeyRequestBody,
  CreatedApiKeyResponse,
  CreateWorkspaceApiKeyRequestBody,
  CreateWorkspaceRequestBody,
  CreateWorkspaceResponse,
  WorkspaceListQuery,
  WorkspaceListResponse,
  WorkspaceParams,
} from "../workspaces.js";
import { adminErrors, adminKey, errors, json, registry, rootKey } from "./registry.js";

export function registerKeysPaths() {
  const rootSecurity = [{ [rootKey.name]: [] }];
  registry.registerPath({
    method: "post",
    path: "/api/admin/workspaces",
    tags: ["Workspaces"],
    summary: "Create a workspace with a write key and an admin API key",
    security: rootSecurity,
    request: { body: json(CreateWorkspaceRequestBody) },
    responses: {
      201: { description: "Created. The keys are shown only here.", ...json(CreateWorkspaceResponse) },
      ...errors("VALIDATION_FAILED", "UNAUTHORIZED", "CONFLICT", "INTERNAL"),
    },
  });

  registry.registerPath({
    method: "get",
    path: "/api/admin/workspaces",
    tags: ["Workspaces"],
    summary: "List workspaces, ordered by name then id",
    security: rootSecurity,
    request: { query: WorkspaceListQuery },
    responses: {
      200: { description: "A page of workspaces.", ...json(WorkspaceListResponse) },
      ...errors("VALIDATION_FAILED", "UNAUTHORIZED", "INTERNAL"),
    },
  });

  registry.registerPath({
    method: "post",
    path: "/api/admin/workspaces/{id}/api-keys",
    tags: ["Workspaces"],
    summary: "Create an admin API key for any workspace",
    description:
      "For an operator who lost a workspace's keys: the root key mints a new admin API key for the workspace. The key is shown only in this response.",
    security: rootSecurity,
    request: { params: WorkspaceParams, body: { ...json(CreateWorkspaceApiKeyRequestBody), required: false } },
    responses: {
      201: { description: "Created; `key` is shown only here.", ...json(CreatedApiKeyResponse) },
      ...errors("VALIDATION_FAILED", "UNAUTHORIZED", "NOT_FOUND", "INTERNAL"),
    },
  });

  for (const [path, kind] of [
    ["/api/admin/api-keys", "admin API key"],
    ["/api/admin/write-keys", "write key"],
  ] as const) {
    const isAdmin = path === "/api/admin/api-keys";
    registry.registerPath({
      method: "post",
      path,
      tags: ["Keys"],
      summary: `Create a ${kind}`,
      security: [{ [adminKey.name]: [] }],
      request: { body: { ...json(CreateApiKeyRequestBody), required: false } },
      responses: { 201: { description: "Created; `key` is shown only here.", ...json(CreatedApiKeyResponse) }, ...adminErrors() },
    });
    registry.registerPath({
      method: "get",
      path,
      tags: ["Keys"],
      summary: `List ${kind}s (without the keys themselves)`,
      security: [{ [adminKey.name]: [] }],
      request: { query: ApiKeyQuery },
      responses: { 200: { description: "The keys.", ...json(ApiKeyListResponse) }, ...adminErrors() },
    });
    registry.registerPath({
      method: "delete",
      path: `${path}/{id}`,
      tags: ["Keys"],
      summary: `Revoke a ${kind}`,
      ...(isAdmin
        ? {
            description:
              "Revoking an already revoked key changes nothing (204). The last active admin API key of a workspace cannot be revoked (409): create another one first, so the workspace never locks itself out.",
          }
        : { description: "Revoking an already revoked key changes nothing (204)." }),
      security: [{ [adminKey.name]: [] }],
      request: { params: ApiKeyParams, query: ApiKeyQuery },
      responses: { 204: { description: "Revoked." }, ...(isAdmin ? adminErrors("NOT_FOUND", "CONFLICT") : adminErrors("NOT_FOUND")) },
    });
  }
}
