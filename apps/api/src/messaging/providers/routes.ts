// Admin routes of channel providers.
import { contractsById as op } from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";
import type { AppContext } from "../../app/context.ts";
import { route } from "../../http/route.ts";
import { SecretBox } from "../../lib/secrets.ts";
import { deleteProvider, getProvider, listProviders, upsertProvider } from "./service.ts";

export const providerRoutes: FastifyPluginAsync<{ ctx: AppContext }> = async (app, { ctx }) => {
  const { prisma } = ctx.db;
  const box = new SecretBox(ctx.config.secretKey);
  route(app, op["providers.upsert"], ({ workspaceId, body }) => upsertProvider(prisma, box, workspaceId, body, ctx.guard));
  route(app, op["providers.list"], ({ workspaceId, query }) => listProviders(prisma, box, workspaceId, query));
  route(app, op["providers.get"], ({ workspaceId, params }) => getProvider(prisma, box, workspaceId, params.id));
  route(app, op["providers.delete"], ({ workspaceId, params }) => deleteProvider(prisma, workspaceId, params.id));
};
