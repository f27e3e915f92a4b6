// Admin route of apply: several resources written together, or checked (dry run).
import { contractsById as op } from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";
import type { AppContext } from "../app/context.ts";
import { route } from "../http/route.ts";
import { applyResources } from "./service.ts";

export const applyRoutes: FastifyPluginAsync<{ ctx: AppContext }> = async (app, { ctx }) => {
  route(app, op["resources.apply"], ({ workspaceId, body }) =>
    applyResources(ctx.db.prisma, workspaceId, body, { guard: ctx.guard, liquid: ctx.renders }),
  );
};
