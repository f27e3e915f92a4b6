// Admin routes for segments, their hand-set members and their size history.
import { contractsById as op } from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";
import type { PrismaClient } from "../db/client.ts";
import { upsertAlone } from "../db/upsert.ts";
import { route } from "../http/route.ts";
import { changeMembers, listSegmentUsers } from "./members.ts";
import { segmentSizes } from "./sizes.ts";
import { deleteSegment, findSegment, listSegments, toSegmentResource, upsertSegment } from "./service.ts";

export const segmentRoutes =
  (deps: { prisma: PrismaClient }): FastifyPluginAsync =>
  async (app) => {
    const { prisma } = deps;
    route(app, op["segments.upsert"], ({ workspaceId, body }) => upsertAlone(prisma, (tx) => upsertSegment(tx, workspaceId, body)));
    route(app, op["segments.list"], ({ workspaceId, query }) => listSegments(prisma, workspaceId, query));
    route(app, op["segments.get"], async ({ workspaceId, params }) => toSegmentResource(await findSegment(prisma, workspaceId, params.id)));
    route(app, op["segments.delete"], ({ workspaceId, params }) => deleteSegment(prisma, workspaceId, params.id));
    route(app, op["segments.members.put"], ({ workspaceId, params, body }) => changeMembers(prisma, workspaceId, params.id, body));
    route(app, op["segments.users.list"], ({ workspaceId, params, query }) => listSegmentUsers(prisma, workspaceId, params.id, query));
    route(app, op["segments.sizes"], ({ workspaceId, params, query }) => segmentSizes(prisma, workspaceId, params.id, query));
  };
