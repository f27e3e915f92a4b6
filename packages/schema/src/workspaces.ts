// Workspaces and the keys that act on them.
import { z } from "./zod.js";
import { EpochMillis, WorkspaceId } from "./common.js";

export const WorkspaceResource = z.object({
  id: WorkspaceId,
  name: z.string(),
  createdAt: EpochMillis,
});
export type WorkspaceResource = z.infer<typeof WorkspaceResource>;

export const CreateWorkspaceRequestBody = z.object({
  name: z.string().min(1).max(200).describe("Unique workspace name."),
});
export type CreateWorkspaceRequestBody = z.infer<typeof CreateWorkspaceRequestBody>;

export const ApiKeyKind = z.enum(["Admin", "Write"]).describe("Admin keys call /api/admin; write keys ingest events.");
export type ApiKeyKind = z.infer<typeof ApiKeyKind>;

export const ApiKeyResource = z.object({
  id: z.uuid(),
  workspaceId: WorkspaceId,
  kind: ApiKeyKind,
  name: z.string().nullable(),
  prefix: z.string().describe("First characters of the key, to recognise it. The key itself is never returned again."),
  createdAt: EpochMillis,
  revokedAt: EpochMillis.nullable(),
});
export type ApiKeyResource = z.infer<typeof ApiKeyResource>;

export const CreatedApiKeyResponse = ApiKeyResource.extend({
  key: z.string().describe("The key. Shown only in this response; only its hash is stored."),
});
export type CreatedApiKeyResponse = z.infer<typeof CreatedApiKeyResponse>;

export const CreateApiKeyRequestBody = z.object({
  workspaceId: WorkspaceId.optional().describe("Defaults to the admin key's workspace and must match it."),
  name: z.string().min(1).max(200).optional(),
});
export type CreateApiKeyRequestBody = z.infer<typeof CreateApiKeyRequestBody>;

export const ApiKeyListResponse = z.object({
  items: z.array(ApiKeyResource),
  keys: z.array(ApiKeyResource),
  nextCursor: z.string().nullable(),
});
export type ApiKeyListResponse = z.infer<typeof ApiKeyListResponse>;

export const CreateWorkspaceResponse = z.object({
  workspace: WorkspaceResource,
  writeKey: z.string().describe("A write key for public ingestion. Shown once."),
  adminApiKey: z.string().describe("An admin API key bound to the new workspace. Shown once."),
});
export type CreateWorkspaceResponse = z.infer<typeof CreateWorkspaceResponse>;
