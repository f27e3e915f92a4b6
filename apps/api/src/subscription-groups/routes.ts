// Admin routes for subscription groups and users' assignments to them.
import { contractsById as op } from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";
import type { PrismaClient } from "../db/client.ts";
import { upsertAlone } from "../db/upsert.ts";
import { route } from "../http/route.ts";
import { assignSubscriptions, listAssignments } from "./assignments.ts";
import {
  deleteSubscriptionGroup,
  findSubscriptionGroup,
  listSubscriptionGroups,
  toSubscriptionGroupResource,
  upsertSubscriptionGroup,
} from "./service.ts";

export const subscriptionGroupRoutes =
  (deps: { prisma: PrismaClient }): FastifyPluginAsync =>
  async (app) => {
    const { prisma } = deps;
    route(app, op["subscriptionGroups.upsert"], ({ workspaceId, body }) =>
      upsertAlone(prisma, (tx) => upsertSubscriptionGroup(tx, workspaceId, body)),
    );
    route(app, op["subscriptionGroups.list"], ({ workspaceId, query }) => listSubscriptionGroups(prisma, workspaceId, query));
    route(app, op["subscriptionGroups.get"], async ({ workspaceId, params }) =>
      toSubscriptionGroupResource(await findSubscriptionGroup(prisma, workspaceId, params.id)),
    );
    route(app, op["subscriptionGroups.delete"], ({ workspaceId, params }) => deleteSubscriptionGroup(prisma, workspaceId, params.id));
    route(app, op["subscriptionGroups.assignments.put"], ({ workspaceId, params, body }) =>
      assignSubscriptions(prisma, workspaceId, params.id, body),
    );
    route(app, op["subscriptionGroups.assignments.list"], ({ workspaceId, params, query }) =>
      listAssignments(prisma, workspaceId, params.id, query),
    );
  };
