// Admin routes for segments and their hand-set members.
import {
  SegmentListQuery,
  SegmentListResponse,
  SegmentMembersRequestBody,
  SegmentMembersResponse,
  SegmentParams,
  SegmentQuery,
  SegmentResource,
  SegmentUsersQuery,
  SegmentUsersResponse,
  UpsertSegmentRequestBody,
} from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { adminGuard, workspaceOf } from "../auth/guards.ts";
import type { AppContext } from "../http/context.ts";
import { changeMembers, listSegmentUsers } from "./members.ts";
import { deleteSegment, findSegment, listSegments, toSegmentResource, upsertSegment } from "./service.ts";

export const segmentRoutes: FastifyPluginAsync<{ ctx: AppContext }> = async (fastify, { ctx }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { prisma } = ctx.db;
  app.addHook("onRequest", adminGuard(ctx.keys));

  app.put(
    "/api/admin/segments",
    { schema: { body: UpsertSegmentRequestBody, response: { 200: SegmentResource } } },
    async (request) => upsertSegment(prisma, workspaceOf(request, request.body.workspaceId), request.body),
  );

  app.get(
    "/api/admin/segments",
    { schema: { querystring: SegmentListQuery, response: { 200: SegmentListResponse } } },
    async (request) => listSegments(prisma, workspaceOf(request, request.query.workspaceId), request.query),
  );

  app.get(
    "/api/admin/segments/:id",
    { schema: { params: SegmentParams, querystring: SegmentQuery, response: { 200: SegmentResource } } },
    async (request) =>
      toSegmentResource(await findSegment(prisma, workspaceOf(request, request.query.workspaceId), request.params.id)),
  );

  app.delete(
    "/api/admin/segments/:id",
    { schema: { params: SegmentParams, querystring: SegmentQuery } },
    async (request, reply) => {
      await deleteSegment(prisma, workspaceOf(request, request.query.workspaceId), request.params.id);
      return reply.status(204).send();
    },
  );

  app.put(
    "/api/admin/segments/:id/members",
    { schema: { params: SegmentParams, body: SegmentMembersRequestBody, response: { 200: SegmentMembersResponse } } },
    async (request) =>
      changeMembers(prisma, workspaceOf(request, request.body.workspaceId), request.params.id, request.body),
  );

  app.get(
    "/api/admin/segments/:id/users",
    { schema: { params: SegmentParams, querystring: SegmentUsersQuery, response: { 200: SegmentUsersResponse } } },
    async (request) =>
      listSegmentUsers(prisma, workspaceOf(request, request.query.workspaceId), request.params.id, request.query),
  );
};
