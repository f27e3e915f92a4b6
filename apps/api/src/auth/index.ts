// Auth: keys (hashed, cached), workspaces, the admin API's guard and ingestion's write-key guard,
// and the first start's bootstrap of a default workspace.
import type { FastifyInstance } from "fastify";
import type { PrismaClient } from "../db/client.ts";
import type { Module } from "../http/module.ts";
import { registerAdminAuth } from "./admin-plugin.ts";
import { writeKeyGuard } from "./guards.ts";
import { KeyStore } from "./keys.ts";
import { authRoutes } from "./routes.ts";

export { type Credentials, ensureDefaultWorkspace, resolveSecrets, savedKeysPath } from "./bootstrap.ts";
export { createWorkspace } from "./service.ts";

export interface AuthDeps {
  prisma: PrismaClient;
  /** How long a looked-up key is trusted before it is checked again. */
  keyCacheSeconds: number;
  rootKey: string;
}

export function createAuth(deps: AuthDeps) {
  const keys = new KeyStore(deps.prisma, deps.keyCacheSeconds);
  return {
    keys,
    /** Installs the admin API's guard on the instance that holds every admin route. */
    guardAdmin: (admin: FastifyInstance) => registerAdminAuth(admin, { keys, rootKey: deps.rootKey }),
    /** Ingestion's guard: the request's workspace from its write key. */
    writeKeyGuard: writeKeyGuard(keys),
    module: { adminRoutes: authRoutes({ prisma: deps.prisma, keys }) } satisfies Module,
  };
}
export type Auth = ReturnType<typeof createAuth>;
