// Admin routes for the deliveries read side.
import { contractsById as op } from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";
import type { PrismaClient } from "../db/client.ts";
import { route } from "../http/route.ts";
import { getDelivery, listDeliveries } from "./delivery-reads.ts";

export const deliveryRoutes =
  (deps: { prisma: PrismaClient }): FastifyPluginAsync =>
  async (app) => {
    route(app, op["deliveries.list"], ({ workspaceId, query }) => listDeliveries(deps.prisma, workspaceId, query));
    route(app, op["deliveries.get"], ({ workspaceId, params }) => getDelivery(deps.prisma, workspaceId, params.id));
  };
