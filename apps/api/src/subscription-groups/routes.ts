// Admin routes for subscription groups and users' assignments to them.
import {
  SubscriptionAssignmentListQuery,
  SubscriptionAssignmentListResponse,
  SubscriptionAssignmentsRequestBody,
  SubscriptionAssignmentsResponse,
  SubscriptionGroupListQuery,
  SubscriptionGroupListResponse,
  SubscriptionGroupParams,
  SubscriptionGroupQuery,
  SubscriptionGroupResource,
  UpsertSubscriptionGroupRequestBody,
} from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { adminGuard, workspaceOf } from "../auth/guards.ts";
import type { AppContext } from "../http/context.ts";
import { assignSubscriptions, listAssignments } from "./assignments.ts";
import {
  deleteSubscriptionGroup,
  findSubscriptionGroup,
  listSubscriptionGroups,
  toSubscriptionGroupResource,
  upsertSubscriptionGroup,
} from "./service.ts";

export const subscriptionGroupRoutes: FastifyPluginAsync<{ ctx: AppContext }> = async (fastify, { ctx }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { prisma } = ctx.db;
  app.addHook("onRequest", adminGuard(ctx.keys));

  app.put(
    "/api/admin/subscription-groups",
    { schema: { body: UpsertSubscriptionGroupRequestBody, response: { 200: SubscriptionGroupResource } } },
    async (request) => upsertSubscriptionGroup(prisma, workspaceOf(request, request.body.workspaceId), request.body),
  );

  app.get(
    "/api/admin/subscription-groups",
    { schema: { querystring: SubscriptionGroupListQuery, response: { 200: SubscriptionGroupListResponse } } },
    async (request) => listSubscriptionGroups(prisma, workspaceOf(request, request.query.workspaceId), request.query),
  );

  app.get(
    "/api/admin/subscription-groups/:id",
    {
      schema: { params: SubscriptionGroupParams, querystring: SubscriptionGroupQuery, response: { 200: SubscriptionGroupResource } },
    },
    async (request) =>
      toSubscriptionGroupResource(
        await findSubscriptionGroup(prisma, workspaceOf(request, request.query.workspaceId), request.params.id),
      ),
  );

  app.delete(
    "/api/admin/subscription-groups/:id",
    { schema: { params: SubscriptionGroupParams, querystring: SubscriptionGroupQuery } },
    async (request, reply) => {
      await deleteSubscriptionGroup(prisma, workspaceOf(request, request.query.workspaceId), request.params.id);
      return reply.status(204).send();
    },
  );

  app.put(
    "/api/admin/subscription-groups/:id/assignments",
    {
      schema: {
        params: SubscriptionGroupParams,
        body: SubscriptionAssignmentsRequestBody,
        response: { 200: SubscriptionAssignmentsResponse },
      },
    },
    async (request) =>
      assignSubscriptions(prisma, workspaceOf(request, request.body.workspaceId), request.params.id, request.body),
  );

  app.get(
    "/api/admin/subscription-groups/:id/assignments",
    {
      schema: {
        params: SubscriptionGroupParams,
        querystring: SubscriptionAssignmentListQuery,
        response: { 200: SubscriptionAssignmentListResponse },
      },
    },
    async (request) =>
      listAssignments(prisma, workspaceOf(request, request.query.workspaceId), request.params.id, request.query),
  );
};
