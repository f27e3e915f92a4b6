// Workspaces and their keys.
import type { ApiKeyKind, ApiKeyResource, CreatedApiKeyResponse, CreateWorkspaceResponse } from "@tidings/schema";
import type { PrismaClient } from "../db/client.ts";
import { ApiError, notFound } from "../http/errors.ts";
import { newKeyRow, toApiKeyResource } from "./keys.ts";
import { isUniqueViolation } from "../db/errors.ts";

export async function createWorkspace(prisma: PrismaClient, name: string): Promise<CreateWorkspaceResponse> {
  const write = newKeyRow("Write", "default");
  const admin = newKeyRow("Admin", "default");
  try {
    const workspace = await prisma.workspace.create({
      data: { name, keys: { create: [write.data, admin.data] } },
    });
    return {
      workspace: { id: workspace.id, name: workspace.name, createdAt: workspace.createdAt.getTime() },
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

export async function listKeys(prisma: PrismaClient, workspaceId: string, kind: ApiKeyKind): Promise<ApiKeyResource[]> {
  const rows = await prisma.apiKey.findMany({ where: { workspaceId, kind }, orderBy: { createdAt: "asc" } });
  return rows.map(toApiKeyResource);
}

/** Revokes a key (idempotent for an already revoked key). */
export async function revokeKey(prisma: PrismaClient, workspaceId: string, kind: ApiKeyKind, id: string): Promise<void> {
  const { count } = await prisma.apiKey.updateMany({
    where: { workspaceId, kind, id },
    data: { revokedAt: new Date() },
  });
  if (count === 0) throw notFound(kind === "Admin" ? "API key" : "Write key");
}
