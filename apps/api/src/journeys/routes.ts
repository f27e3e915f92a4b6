// Admin routes for journeys, their runs and stats.
import { contractsById as op } from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";
import type { PrismaClient } from "../db/client.ts";
import { upsertAlone } from "../db/upsert.ts";
import { route } from "../http/route.ts";
import { journeyStats, listRuns } from "./runs.ts";
import { deleteJourney, findJourney, listJourneys, toJourneyResource, upsertJourney } from "./service.ts";

export const journeyRoutes =
  (deps: { prisma: PrismaClient }): FastifyPluginAsync =>
  async (app) => {
    const { prisma } = deps;
    route(app, op["journeys.upsert"], ({ workspaceId, body }) => upsertAlone(prisma, (tx) => upsertJourney(tx, workspaceId, body)));
    route(app, op["journeys.list"], ({ workspaceId, query }) => listJourneys(prisma, workspaceId, query));
    route(app, op["journeys.get"], async ({ workspaceId, params }) => toJourneyResource(await findJourney(prisma, workspaceId, params.id)));
    route(app, op["journeys.delete"], ({ workspaceId, params }) => deleteJourney(prisma, workspaceId, params.id));
    route(app, op["journeys.runs.list"], ({ workspaceId, params, query }) => listRuns(prisma, workspaceId, params.id, query));
    route(app, op["journeys.stats"], ({ workspaceId, params, query }) => journeyStats(prisma, workspaceId, params.id, query.version));
  };
