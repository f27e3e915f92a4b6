// Admin routes for journeys. Stats (`GET /api/admin/journeys/:id/stats`) come with the journey runtime.
import { contractsById as op } from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";
import type { AppContext } from "../http/context.ts";
import { route } from "../http/route.ts";
import { deleteJourney, findJourney, listJourneys, toJourneyResource, upsertJourney } from "./service.ts";

export const journeyRoutes: FastifyPluginAsync<{ ctx: AppContext }> = async (app, { ctx }) => {
  const { prisma } = ctx.db;
  route(app, op["journeys.upsert"], ({ workspaceId, body }) => upsertJourney(prisma, workspaceId, body));
  route(app, op["journeys.list"], ({ workspaceId, query }) => listJourneys(prisma, workspaceId, query));
  route(app, op["journeys.get"], async ({ workspaceId, params }) => toJourneyResource(await findJourney(prisma, workspaceId, params.id)));
  route(app, op["journeys.delete"], ({ workspaceId, params }) => deleteJourney(prisma, workspaceId, params.id));
};
