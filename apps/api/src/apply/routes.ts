// Admin route of apply: several resources written together, or checked (dry run).
import { contractsById as op } from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";
import type { PrismaClient } from "../db/client.ts";
import type { OutboundGuard } from "../outbound/index.ts";
import type { RenderPool } from "../templates/index.ts";
import { route } from "../http/route.ts";
import { applyResources } from "./service.ts";

export const applyRoutes =
  (deps: { prisma: PrismaClient; guard: OutboundGuard; liquid: Pick<RenderPool, "syntaxIssues"> }): FastifyPluginAsync =>
  async (app) => {
    route(app, op["resources.apply"], ({ workspaceId, body }) =>
      applyResources(deps.prisma, workspaceId, body, { guard: deps.guard, liquid: deps.liquid }),
    );
  };
