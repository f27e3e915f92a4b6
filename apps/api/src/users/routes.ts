// Admin read routes over ingested data.
import { EventListQuery, EventListResponse, UserParams, UserQuery, UserResource } from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { adminGuard, workspaceOf } from "../auth/guards.ts";
import type { AppContext } from "../http/context.ts";
import { getUser, listEvents } from "./service.ts";

export const userRoutes: FastifyPluginAsync<{ ctx: AppContext }> = async (fastify, { ctx }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { prisma } = ctx.db;
  app.addHook("onRequest", adminGuard(ctx.keys));

  app.get(
    "/api/admin/users/:userId",
    { schema: { params: UserParams, querystring: UserQuery, response: { 200: UserResource } } },
    async (request) => getUser(prisma, workspaceOf(request, request.query.workspaceId), request.params.userId),
  );

  app.get(
    "/api/admin/events",
    { schema: { querystring: EventListQuery, response: { 200: EventListResponse } } },
    async (request) => listEvents(prisma, workspaceOf(request, request.query.workspaceId), request.query),
  );
};
