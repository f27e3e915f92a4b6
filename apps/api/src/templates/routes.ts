// Admin routes of message templates and the render preview.
import {
  MessageTemplateListQuery,
  MessageTemplateListResponse,
  MessageTemplateParams,
  MessageTemplateQuery,
  MessageTemplateResource,
  RenderTemplateRequestBody,
  RenderTemplateResponse,
  UpsertMessageTemplateRequestBody,
} from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { adminGuard, workspaceOf } from "../auth/guards.ts";
import type { AppContext } from "../http/context.ts";
import { renderTemplateRequest } from "./render.ts";
import { deleteTemplate, findTemplate, listTemplates, toTemplateResource, upsertTemplate } from "./service.ts";

const PATH = "/api/admin/content/templates";

export const templateRoutes: FastifyPluginAsync<{ ctx: AppContext }> = async (fastify, { ctx }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { prisma } = ctx.db;
  app.addHook("onRequest", adminGuard(ctx.keys));

  app.put(
    PATH,
    { schema: { body: UpsertMessageTemplateRequestBody, response: { 200: MessageTemplateResource } } },
    async (request) => upsertTemplate(prisma, workspaceOf(request, request.body.workspaceId), request.body),
  );

  app.get(
    PATH,
    { schema: { querystring: MessageTemplateListQuery, response: { 200: MessageTemplateListResponse } } },
    async (request) => listTemplates(prisma, workspaceOf(request, request.query.workspaceId), request.query),
  );

  app.get(
    `${PATH}/:id`,
    { schema: { params: MessageTemplateParams, querystring: MessageTemplateQuery, response: { 200: MessageTemplateResource } } },
    async (request) =>
      toTemplateResource(await findTemplate(prisma, workspaceOf(request, request.query.workspaceId), request.params.id)),
  );

  app.delete(
    `${PATH}/:id`,
    { schema: { params: MessageTemplateParams, querystring: MessageTemplateQuery } },
    async (request, reply) => {
      await deleteTemplate(prisma, workspaceOf(request, request.query.workspaceId), request.params.id);
      return reply.status(204).send();
    },
  );

  app.post(
    `${PATH}/render`,
    { schema: { body: RenderTemplateRequestBody, response: { 200: RenderTemplateResponse } } },
    async (request) =>
      renderTemplateRequest(prisma, workspaceOf(request, request.body.workspaceId), request.body, {
        secretKey: ctx.config.secretKey,
        baseUrl: ctx.config.publicUrl,
      }),
  );
};
