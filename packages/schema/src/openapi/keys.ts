// Workspaces and their keys.
import { z } from "zod";
import {
  ApiKeyListResponse,
  CreateApiKeyRequestBody,
  CreatedApiKeyResponse,
  CreateWorkspaceRequestBody,
  CreateWorkspaceResponse,
} from "../workspaces.js";
import { adminErrors, adminKey, errors, json, registry, rootKey } from "./registry.js";

export function registerKeysPaths() {
  registry.registerPath({
    method: "post",
    path: "/api/admin/workspaces",
    tags: ["Workspaces"],
    summary: "Create a workspace with a write key and an admin API key",
    security: [{ [rootKey.name]: [] }],
    request: { body: json(CreateWorkspaceRequestBody) },
    responses: {
      201: { description: "Created. The keys are shown only here.", ...json(CreateWorkspaceResponse) },
      ...errors("VALIDATION_FAILED", "UNAUTHORIZED", "CONFLICT", "INTERNAL"),
    },
  });

  for (const [path, kind] of [
    ["/api/admin/api-keys", "admin API key"],
    ["/api/admin/write-keys", "write key"],
  ] as const) {
    registry.registerPath({
      method: "post",
      path,
      tags: ["Keys"],
      summary: `Create a ${kind}`,
      security: [{ [adminKey.name]: [] }],
      request: { body: json(CreateApiKeyRequestBody) },
      responses: { 201: { description: "Created; `key` is shown only here.", ...json(CreatedApiKeyResponse) }, ...adminErrors() },
    });
    registry.registerPath({
      method: "get",
      path,
      tags: ["Keys"],
      summary: `List ${kind}s (without the keys themselves)`,
      security: [{ [adminKey.name]: [] }],
      request: { query: z.object({ workspaceId: z.uuid().optional() }) },
      responses: { 200: { description: "The keys.", ...json(ApiKeyListResponse) }, ...adminErrors() },
    });
    registry.registerPath({
      method: "delete",
      path: `${path}/{id}`,
      tags: ["Keys"],
      summary: `Revoke a ${kind}`,
      security: [{ [adminKey.name]: [] }],
      request: { params: z.object({ id: z.uuid() }) },
      responses: { 204: { description: "Revoked." }, ...adminErrors("NOT_FOUND") },
    });
  }
}
