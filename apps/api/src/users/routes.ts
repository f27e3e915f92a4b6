// Admin read routes over ingested data.
import { contractsById as op } from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";
import type { PrismaClient } from "../db/client.ts";
import { route } from "../http/route.ts";
import { deleteUser, getUser, listEvents, listUsers } from "./service.ts";

export const userRoutes =
  (deps: { prisma: PrismaClient }): FastifyPluginAsync =>
  async (app) => {
    const { prisma } = deps;
    route(app, op["users.get"], ({ workspaceId, params }) => getUser(prisma, workspaceId, params.userId));
    route(app, op["users.list"], ({ workspaceId, query }) => listUsers(prisma, workspaceId, query));
    route(app, op["users.delete"], ({ workspaceId, params }) => deleteUser(prisma, workspaceId, params.userId));
    route(app, op["events.list"], ({ workspaceId, query }) => listEvents(prisma, workspaceId, query));
  };
