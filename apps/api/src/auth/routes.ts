// Routes: workspaces (root key) and the admin/write keys of a workspace (admin key).
import { contractsById as op } from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";
import type { PrismaClient } from "../db/client.ts";
import type { KeyStore } from "./keys.ts";
import { route } from "../http/route.ts";
import { createKey, createWorkspace, createWorkspaceAdminKey, listKeys, listWorkspaces, revokeKey } from "./service.ts";

export const authRoutes =
  (deps: { prisma: PrismaClient; keys: KeyStore }): FastifyPluginAsync =>
  async (app) => {
    const { prisma } = deps;

    route(app, op["workspaces.create"], ({ body }) => createWorkspace(prisma, body.name));
    route(app, op["workspaces.list"], ({ query }) => listWorkspaces(prisma, query));
    route(app, op["workspaces.apiKeys.create"], ({ params, body }) => createWorkspaceAdminKey(prisma, params.id, body?.name));

    for (const [ns, kind] of [
      ["apiKeys", "Admin"],
      ["writeKeys", "Write"],
    ] as const) {
      route(app, op[`${ns}.create`], ({ workspaceId, body }) => createKey(prisma, workspaceId, kind, body?.name));
      route(app, op[`${ns}.list`], async ({ workspaceId }) => {
        const keys = await listKeys(prisma, workspaceId, kind);
        return { items: keys, keys, nextCursor: null };
      });
      route(app, op[`${ns}.revoke`], async ({ workspaceId, params }) => {
        await revokeKey(prisma, workspaceId, kind, params.id);
        deps.keys.forget(params.id);
      });
    }
  };
