// Admin routes for broadcasts.
import { contractsById as op } from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";
import type { PrismaClient } from "../db/client.ts";
import { route } from "../http/route.ts";
import { cancelBroadcast, executeBroadcast, getBroadcast, listBroadcasts } from "./service.ts";

export const broadcastRoutes =
  (deps: { prisma: PrismaClient }): FastifyPluginAsync =>
  async (app) => {
    const { prisma } = deps;
    route(app, op["broadcasts.execute"], ({ workspaceId, body }) => executeBroadcast(prisma, workspaceId, body));
    route(app, op["broadcasts.list"], ({ workspaceId, query }) => listBroadcasts(prisma, workspaceId, query));
    route(app, op["broadcasts.get"], ({ workspaceId, params }) => getBroadcast(prisma, workspaceId, params.id));
    route(app, op["broadcasts.cancel"], ({ workspaceId, params }) => cancelBroadcast(prisma, workspaceId, params.id));
  };
