// Admin routes of channel providers.
import { contractsById as op } from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";
import type { PrismaClient } from "../../db/client.ts";
import { upsertAlone } from "../../db/upsert.ts";
import type { OutboundGuard } from "../../outbound/index.ts";
import { route } from "../../http/route.ts";
import type { SecretBox } from "../../lib/secrets.ts";
import { deleteProvider, getProvider, listProviders, upsertProvider, withDestinationWarnings } from "./service.ts";

export const providerRoutes =
  (deps: { prisma: PrismaClient; box: SecretBox; guard: OutboundGuard }): FastifyPluginAsync =>
  async (app) => {
    const { prisma, box, guard } = deps;
    route(app, op["providers.upsert"], async ({ workspaceId, body }) => {
      const row = await upsertAlone(prisma, (tx) => upsertProvider(tx, box, workspaceId, body));
      return withDestinationWarnings(box, row, guard);
    });
    route(app, op["providers.list"], ({ workspaceId, query }) => listProviders(prisma, box, workspaceId, query));
    route(app, op["providers.get"], ({ workspaceId, params }) => getProvider(prisma, box, workspaceId, params.id));
    route(app, op["providers.delete"], ({ workspaceId, params }) => deleteProvider(prisma, workspaceId, params.id));
  };
