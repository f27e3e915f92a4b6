// Workspaces and their keys.
import type {
  ApiKeyKind,
  ApiKeyResource,
  CreatedApiKeyResponse,
  CreateWorkspaceResponse,
  WorkspaceListQuery,
  WorkspaceListResponse,
  WorkspaceResource,
} from "@tidings/schema";
import type { PrismaClient } from "../db/client.ts";
import { prismaExecute, sql } from "../db/sql.ts";
import { ApiError, notFound } from "../lib/errors.ts";
import { afterNameAndId, page } from "../http/pagination.ts";
import { newKeyRow, toApiKeyResource } from "./keys.ts";
import { isUniqueViolation } from "../db/errors.ts";

const toWorkspaceResource = (row: { id: string; name: string; createdAt: Date }): WorkspaceResource => ({
  id: row.id,
  name: row.name,
  createdAt: row.createdAt.getTime(),
});

export async function createWorkspace(prisma: PrismaClient, name: string): Promise<CreateWorkspaceResponse> {
  const write = newKeyRow("Write", "default");
  const admin = newKeyRow("Admin", "default");
  try {
    const workspace = await prisma.workspace.create({
      data: { name, keys: { create: [write.data, admin.data] } },
    });
    return {
      workspace: toWorkspaceResource(workspace),
      writeKey: write.key,
      adminApiKey: admin.key,
    };
  } catch (err) {
    if (isUniqueViolation(err)) {
      throw new ApiError("CONFLICT", `A workspace named ${JSON.stringify(name)} already exists`);
    }
    throw err;
  }
}

export async function createKey(
  prisma: PrismaClient,
  workspaceId: string,
  kind: ApiKeyKind,
  name?: string,
): Promise<CreatedApiKeyResponse> {
  const { key, data } = newKeyRow(kind, name);
  const row = await prisma.apiKey.create({ data: { workspaceId, ...data } });
  return { ...toApiKeyResource(row), key };
}

/** Workspaces ordered by name then id, keyset-paginated (root key). */
export async function listWorkspaces(prisma: PrismaClient, query: WorkspaceListQuery): Promise<WorkspaceListResponse> {
  const rows = await prisma.workspace.findMany({
    where: query.cursor ? afterNameAndId(query.cursor) : {},
    orderBy: [{ name: "asc" }, { id: "asc" }],
    take: query.limit + 1,
  });
  const result = page(rows, query.limit, toWorkspaceResource, (r) => [r.name, r.id]);
  return { ...result, workspaces: result.items };
}

/** A new admin key for any workspace (root key): the way back in for a workspace whose keys are lost. */
export async function createWorkspaceAdminKey(prisma: PrismaClient, workspaceId: string, name?: string): Promise<CreatedApiKeyResponse> {
  const workspace = await prisma.workspace.findUnique({ where: { id: workspaceId }, select: { id: true } });
  if (!workspace) throw notFound(`Workspace ${workspaceId}`);
  return createKey(prisma, workspaceId, "Admin", name);
}

export async function listKeys(prisma: PrismaClient, workspaceId: string, kind: ApiKeyKind): Promise<ApiKeyResource[]> {
  const rows = await prisma.apiKey.findMany({ where: { workspaceId, kind }, orderBy: { createdAt: "asc" } });
  return rows.map(toApiKeyResource);
}

/**
 * Revokes a key; an already revoked key is left as it is. The last active admin key of a
 * workspace cannot be revoked (409): nobody could administer the workspace any more. Admin key
 * revokes of one workspace take the workspace row's lock in turn, so two concurrent revokes of
 * its last two keys cannot each count the other as still active.
 */
export async function revokeKey(prisma: PrismaClient, workspaceId: string, kind: ApiKeyKind, id: string): Promise<void> {
  await prisma.$transaction(async (tx) => {
    // NO KEY UPDATE: conflicts with itself, not with the key-share locks of inserts referencing the workspace.
    if (kind === "Admin") await prismaExecute(tx, sql`SELECT 1 FROM workspaces WHERE id = ${workspaceId}::uuid FOR NO KEY UPDATE`);
    const key = await tx.apiKey.findUnique({
      where: { workspaceId_id: { workspaceId, id } },
      select: { kind: true, revokedAt: true },
    });
    if (!key || key.kind !== kind) throw notFound(kind === "Admin" ? "API key" : "Write key");
    if (key.revokedAt) return;
    if (kind === "Admin") {
      const others = await tx.apiKey.count({ where: { workspaceId, kind: "Admin", revokedAt: null, id: { not: id } } });
      if (others === 0) {
        throw new ApiError(
          "CONFLICT",
          "This is the workspace's last active admin API key: revoking it would lock everyone out. Create another admin key first.",
        );
      }
    }
    await tx.apiKey.update({ where: { workspaceId_id: { workspaceId, id } }, data: { revokedAt: new Date() } });
  });
}
