// Routes: workspaces (root key) and the admin/write keys of a workspace (admin key).
import {
  ApiKeyListResponse,
  CreateApiKeyRequestBody,
  CreatedApiKeyResponse,
  CreateWorkspaceRequestBody,
  CreateWorkspaceResponse,
} from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import type { AppContext } from "../http/context.ts";
import { ApiError } from "../http/errors.ts";
import { adminGuard, rootGuard, workspaceOf } from "./guards.ts";
import { createKey, createWorkspace, listKeys, revokeKey } from "./service.ts";

export const authRoutes: FastifyPluginAsync<{ ctx: AppContext }> = async (fastify, { ctx }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { prisma } = ctx.db;
  const rootKey = ctx.config.rootKey;

  app.post(
    "/api/admin/workspaces",
    {
      schema: { body: CreateWorkspaceRequestBody, response: { 201: CreateWorkspaceResponse } },
      onRequest: rootKey
        ? rootGuard(rootKey)
        : async () => {
            throw new ApiError("UNAUTHORIZED", "No root key is configured (TIDINGS_ROOT_KEY)");
          },
    },
    async (request, reply) => reply.status(201).send(await createWorkspace(prisma, request.body.name)),
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
        const workspaceId = workspaceOf(request, request.body.workspaceId);
        return reply.status(201).send(await createKey(prisma, workspaceId, kind, request.body.name));
      },
    );
    app.get(
      path,
      {
        schema: { querystring: z.object({ workspaceId: z.uuid().optional() }), response: { 200: ApiKeyListResponse } },
        onRequest: requireAdmin,
      },
      async (request) => {
        const keys = await listKeys(prisma, workspaceOf(request, request.query.workspaceId), kind);
        return { items: keys, keys, nextCursor: null };
      },
    );
    app.delete(
      `${path}/:id`,
      { schema: { params: z.object({ id: z.uuid() }) }, onRequest: requireAdmin },
      async (request, reply) => {
        await revokeKey(prisma, workspaceOf(request), kind, request.params.id);
        ctx.keys.forget(request.params.id);
        return reply.status(204).send();
      },
    );
  }
};
