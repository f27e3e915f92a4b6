// Admin routes for the deliveries read side.
import { contractsById as op } from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";
import type { AppContext } from "../app/context.ts";
import { route } from "../http/route.ts";
import { getDelivery, listDeliveries } from "./deliveries.ts";

export const deliveryRoutes: FastifyPluginAsync<{ ctx: AppContext }> = async (app, { ctx }) => {
  route(app, op["deliveries.list"], ({ workspaceId, query }) => listDeliveries(ctx.db.prisma, workspaceId, query));
  route(app, op["deliveries.get"], ({ workspaceId, params }) => getDelivery(ctx.db.prisma, workspaceId, params.id));
};
