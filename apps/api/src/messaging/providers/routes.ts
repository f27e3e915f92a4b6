// Admin routes of channel providers.
import {
  ChannelProviderListQuery,
  ChannelProviderListResponse,
  ChannelProviderParams,
  ChannelProviderQuery,
  ChannelProviderResource,
  UpsertChannelProviderRequestBody,
} from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { adminGuard, workspaceOf } from "../../auth/guards.ts";
import type { AppContext } from "../../http/context.ts";
import { SecretBox } from "../secrets.ts";
import { deleteProvider, getProvider, listProviders, upsertProvider } from "./service.ts";

const PATH = "/api/admin/providers";

export const providerRoutes: FastifyPluginAsync<{ ctx: AppContext }> = async (fastify, { ctx }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { prisma } = ctx.db;
  app.addHook("onRequest", adminGuard(ctx.keys));

  const box = new SecretBox(ctx.config.secretKey);

  app.put(
    PATH,
    { schema: { body: UpsertChannelProviderRequestBody, response: { 200: ChannelProviderResource } } },
    async (request) => upsertProvider(prisma, box, workspaceOf(request, request.body.workspaceId), request.body),
  );

  app.get(
    PATH,
    { schema: { querystring: ChannelProviderListQuery, response: { 200: ChannelProviderListResponse } } },
    async (request) => listProviders(prisma, box, workspaceOf(request, request.query.workspaceId), request.query),
  );

  app.get(
    `${PATH}/:id`,
    { schema: { params: ChannelProviderParams, querystring: ChannelProviderQuery, response: { 200: ChannelProviderResource } } },
    async (request) => getProvider(prisma, box, workspaceOf(request, request.query.workspaceId), request.params.id),
  );

  app.delete(
    `${PATH}/:id`,
    { schema: { params: ChannelProviderParams, querystring: ChannelProviderQuery } },
    async (request, reply) => {
      await deleteProvider(prisma, workspaceOf(request, request.query.workspaceId), request.params.id);
      return reply.status(204).send();
    },
  );
};
