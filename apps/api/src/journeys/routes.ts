// Admin routes for journeys. Stats (`GET /api/admin/journeys/:id/stats`) come with the journey runtime.
import {
  JourneyListQuery,
  JourneyListResponse,
  JourneyParams,
  JourneyQuery,
  JourneyResource,
  UpsertJourneyRequestBody,
} from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { adminGuard, workspaceOf } from "../auth/guards.ts";
import type { AppContext } from "../http/context.ts";
import { deleteJourney, findJourney, listJourneys, toJourneyResource, upsertJourney } from "./service.ts";

export const journeyRoutes: FastifyPluginAsync<{ ctx: AppContext }> = async (fastify, { ctx }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { prisma } = ctx.db;
  app.addHook("onRequest", adminGuard(ctx.keys));

  app.put(
    "/api/admin/journeys",
    { schema: { body: UpsertJourneyRequestBody, response: { 200: JourneyResource } } },
    async (request) => upsertJourney(prisma, workspaceOf(request, request.body.workspaceId), request.body),
  );

  app.get(
    "/api/admin/journeys",
    { schema: { querystring: JourneyListQuery, response: { 200: JourneyListResponse } } },
    async (request) => listJourneys(prisma, workspaceOf(request, request.query.workspaceId), request.query),
  );

  app.get(
    "/api/admin/journeys/:id",
    { schema: { params: JourneyParams, querystring: JourneyQuery, response: { 200: JourneyResource } } },
    async (request) =>
      toJourneyResource(await findJourney(prisma, workspaceOf(request, request.query.workspaceId), request.params.id)),
  );

  app.delete(
    "/api/admin/journeys/:id",
    { schema: { params: JourneyParams, querystring: JourneyQuery } },
    async (request, reply) => {
      await deleteJourney(prisma, workspaceOf(request, request.query.workspaceId), request.params.id);
      return reply.status(204).send();
    },
  );
};
