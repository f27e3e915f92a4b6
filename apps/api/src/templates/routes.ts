// Admin routes of message templates and the render preview.
import { contractsById as op } from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";
import type { PrismaClient } from "../db/client.ts";
import { upsertAlone } from "../db/upsert.ts";
import type { OutboundGuard } from "../outbound/index.ts";
import type { RenderPool } from "./render-pool.ts";
import { route } from "../http/route.ts";
import { renderTemplateRequest } from "./render.ts";
import { webhookWarnings } from "./webhook-warnings.ts";
import { assertTemplateSyntax, deleteTemplate, findTemplate, listTemplates, toTemplateResource, upsertTemplate } from "./service.ts";

export const templateRoutes =
  (deps: { prisma: PrismaClient; renders: RenderPool; guard: OutboundGuard }): FastifyPluginAsync =>
  async (app) => {
    const { prisma, renders, guard } = deps;
    route(app, op["templates.upsert"], async ({ workspaceId, body }) => {
      await assertTemplateSyntax(renders, body);
      const template = await upsertAlone(prisma, (tx) => upsertTemplate(tx, workspaceId, body));
      const warnings = await webhookWarnings(template, { guard });
      return warnings.length ? { ...template, warnings } : template;
    });
    route(app, op["templates.list"], ({ workspaceId, query }) => listTemplates(prisma, workspaceId, query));
    route(app, op["templates.get"], async ({ workspaceId, params }) =>
      toTemplateResource(await findTemplate(prisma, workspaceId, params.id)),
    );
    route(app, op["templates.delete"], ({ workspaceId, params }) => deleteTemplate(prisma, workspaceId, params.id));
    route(app, op["templates.render"], ({ workspaceId, body }) => renderTemplateRequest(prisma, renders, workspaceId, body));
  };
