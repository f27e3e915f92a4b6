// Workspaces and the keys that act on them.
import { z } from "./zod.js";
import {
  Cursor,
  EpochMillis,
  idParams,
  listResponse,
  PageLimit,
  RequestWorkspaceId,
  resourceName,
  WorkspaceId,
  WorkspaceQuery,
} from "./common.js";

export const WorkspaceResource = z.object({
  id: WorkspaceId,
  name: z.string(),
  createdAt: EpochMillis,
});
export type WorkspaceResource = z.infer<typeof WorkspaceResource>;

export const CreateWorkspaceRequestBody = z.strictObject({
  name: resourceName("Unique workspace name."),
});
export type CreateWorkspaceRequestBody = z.infer<typeof CreateWorkspaceRequestBody>;

export const WorkspaceParams = idParams("Workspace");

export const WorkspaceListQuery = z.object({ cursor: Cursor.optional(), limit: PageLimit });
export type WorkspaceListQuery = z.infer<typeof WorkspaceListQuery>;

export const WorkspaceListResponse = listResponse("workspaces", WorkspaceResource);
export type WorkspaceListResponse = z.infer<typeof WorkspaceListResponse>;

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

const keyName = resourceName("A label to recognise the key by.").optional();

// Every field of these bodies is optional, so the body itself is: left out, empty or `null`
// (Fastify hands a missing body to validation as `null`).
export const CreateApiKeyRequestBody = z
  .strictObject({ workspaceId: RequestWorkspaceId, name: keyName })
  .nullish()
  .describe("Every field is optional; the body may be left out, empty or `null`.");
export type CreateApiKeyRequestBody = z.infer<typeof CreateApiKeyRequestBody>;

export const CreateWorkspaceApiKeyRequestBody = z
  .strictObject({ name: keyName })
  .nullish()
  .describe("The body may be left out, empty or `null`.");
export type CreateWorkspaceApiKeyRequestBody = z.infer<typeof CreateWorkspaceApiKeyRequestBody>;

export const ApiKeyParams = idParams("Key");
export const ApiKeyQuery = WorkspaceQuery;

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
