// Admin routes for the workspace's delivery policies.
import { contractsById as op } from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";
import type { PrismaClient } from "../db/client.ts";
import { route } from "../http/route.ts";
import { upsertAlone } from "../db/upsert.ts";
import { getPolicies, upsertPolicies } from "./service.ts";

export const policyRoutes =
  (deps: { prisma: PrismaClient }): FastifyPluginAsync =>
  async (app) => {
    route(app, op["policies.get"], ({ workspaceId }) => getPolicies(deps.prisma, workspaceId));
    route(app, op["policies.put"], ({ workspaceId, body }) => upsertAlone(deps.prisma, (tx) => upsertPolicies(tx, workspaceId, body)));
  };
