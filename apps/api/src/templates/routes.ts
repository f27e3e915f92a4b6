// Admin routes of message templates and the render preview.
import { contractsById as op } from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";
import type { AppContext } from "../app/context.ts";
import { route } from "../http/route.ts";
import { renderTemplateRequest } from "./render.ts";
import { webhookWarnings } from "./webhook-warnings.ts";
import { deleteTemplate, findTemplate, listTemplates, toTemplateResource, upsertTemplate } from "./service.ts";

export const templateRoutes: FastifyPluginAsync<{ ctx: AppContext }> = async (app, { ctx }) => {
  const { prisma } = ctx.db;
  const { guard } = ctx;
  route(app, op["templates.upsert"], async ({ workspaceId, body }) => {
    const template = await upsertTemplate(prisma, workspaceId, body, ctx.renders);
    const warnings = await webhookWarnings(template, { guard });
    return warnings.length ? { ...template, warnings } : template;
  });
  route(app, op["templates.list"], ({ workspaceId, query }) => listTemplates(prisma, workspaceId, query));
  route(app, op["templates.get"], async ({ workspaceId, params }) =>
    toTemplateResource(await findTemplate(prisma, workspaceId, params.id)),
  );
  route(app, op["templates.delete"], ({ workspaceId, params }) => deleteTemplate(prisma, workspaceId, params.id));
  route(app, op["templates.render"], ({ workspaceId, body }) => renderTemplateRequest(prisma, ctx.renders, workspaceId, body));
};
