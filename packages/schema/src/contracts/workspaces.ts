// Workspaces (root key): create, list, and mint an admin API key for any of them.
import {
  CreatedApiKeyResponse,
  CreateWorkspaceApiKeyRequestBody,
  CreateWorkspaceRequestBody,
  CreateWorkspaceResponse,
  WorkspaceListQuery,
  WorkspaceListResponse,
  WorkspaceParams,
} from "../workspaces.js";
import { defineContract } from "./contract.js";

const tags = ["Workspaces"] as const;

export const workspaceContracts = [
  defineContract({
    operationId: "workspaces.create",
    method: "POST",
    path: "/api/admin/workspaces",
    auth: "root",
    tags,
    summary: "Create a workspace with a write key and an admin API key",
    body: CreateWorkspaceRequestBody,
    success: { status: 201, description: "Created. The keys are shown only here.", schema: CreateWorkspaceResponse },
    errors: ["VALIDATION_FAILED", "UNAUTHORIZED", "CONFLICT", "UNAVAILABLE", "INTERNAL"],
  }),
  defineContract({
    operationId: "workspaces.list",
    method: "GET",
    path: "/api/admin/workspaces",
    auth: "root",
    tags,
    summary: "List workspaces, ordered by name then id",
    query: WorkspaceListQuery,
    success: { status: 200, description: "A page of workspaces.", schema: WorkspaceListResponse },
    errors: ["VALIDATION_FAILED", "UNAUTHORIZED", "UNAVAILABLE", "INTERNAL"],
  }),
  defineContract({
    operationId: "workspaces.apiKeys.create",
    method: "POST",
    path: "/api/admin/workspaces/{id}/api-keys",
    auth: "root",
    tags,
    summary: "Create an admin API key for any workspace",
    description:
      "For an operator who lost a workspace's keys: the root key mints a new admin API key for the workspace. The key is shown only in this response.",
    params: WorkspaceParams,
    body: CreateWorkspaceApiKeyRequestBody,
    success: { status: 201, description: "Created; `key` is shown only here.", schema: CreatedApiKeyResponse },
    errors: ["VALIDATION_FAILED", "UNAUTHORIZED", "NOT_FOUND", "UNAVAILABLE", "INTERNAL"],
  }),
] as const;
