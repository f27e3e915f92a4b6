// Admin route for the deliveries read side.
import { contractsById as op } from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";
import type { AppContext } from "../http/context.ts";
import { route } from "../http/route.ts";
import { listDeliveries } from "./deliveries.ts";

export const deliveryRoutes: FastifyPluginAsync<{ ctx: AppContext }> = async (app, { ctx }) => {
  route(app, op["deliveries.list"], ({ workspaceId, query }) => listDeliveries(ctx.db.prisma, workspaceId, query));
};
