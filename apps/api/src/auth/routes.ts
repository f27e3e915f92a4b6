// Routes: workspaces (root key) and the admin/write keys of a workspace (admin key).
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
} from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import type { AppContext } from "../http/context.ts";
import { ApiError } from "../http/errors.ts";
import { adminGuard, rootGuard, workspaceOf } from "./guards.ts";
import { createKey, createWorkspace, createWorkspaceAdminKey, listKeys, listWorkspaces, revokeKey } from "./service.ts";

export const authRoutes: FastifyPluginAsync<{ ctx: AppContext }> = async (fastify, { ctx }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { prisma } = ctx.db;
  const rootKey = ctx.config.rootKey;
  const requireRoot = rootKey
    ? rootGuard(rootKey)
    : async () => {
        throw new ApiError("UNAUTHORIZED", "No root key is configured (TIDINGS_ROOT_KEY)");
      };

  app.post(
    "/api/admin/workspaces",
    { schema: { body: CreateWorkspaceRequestBody, response: { 201: CreateWorkspaceResponse } }, onRequest: requireRoot },
    async (request, reply) => reply.status(201).send(await createWorkspace(prisma, request.body.name)),
  );

  app.get(
    "/api/admin/workspaces",
    { schema: { querystring: WorkspaceListQuery, response: { 200: WorkspaceListResponse } }, onRequest: requireRoot },
    async (request) => listWorkspaces(prisma, request.query),
  );

  app.post(
    "/api/admin/workspaces/:id/api-keys",
    {
      schema: { params: WorkspaceParams, body: CreateWorkspaceApiKeyRequestBody, response: { 201: CreatedApiKeyResponse } },
      onRequest: requireRoot,
    },
    async (request, reply) =>
      reply.status(201).send(await createWorkspaceAdminKey(prisma, request.params.id, request.body?.name)),
  );

  const requireAdmin = adminGuard(ctx.keys);
  for (const [path, kind] of [
    ["/api/admin/api-keys", "Admin"],
    ["/api/admin/write-keys", "Write"],
  ] as const) {
    app.post(
      path,
      { schema: { body: CreateApiKeyRequestBody, response: { 201: CreatedApiKeyResponse } }, onRequest: requireAdmin },
      async (request, reply) => {
        const workspaceId = workspaceOf(request, request.body?.workspaceId);
        return reply.status(201).send(await createKey(prisma, workspaceId, kind, request.body?.name));
      },
    );
    app.get(
      path,
      { schema: { querystring: ApiKeyQuery, response: { 200: ApiKeyListResponse } }, onRequest: requireAdmin },
      async (request) => {
        const keys = await listKeys(prisma, workspaceOf(request, request.query.workspaceId), kind);
        return { items: keys, keys, nextCursor: null };
      },
    );
    app.delete(
      `${path}/:id`,
      { schema: { params: ApiKeyParams, querystring: ApiKeyQuery }, onRequest: requireAdmin },
      async (request, reply) => {
        await revokeKey(prisma, workspaceOf(request, request.query.workspaceId), kind, request.params.id);
        ctx.keys.forget(request.params.id);
        return reply.status(204).send();
      },
    );
  }
};
