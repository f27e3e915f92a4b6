// Apply: several resources written together in one transaction, or checked (dry run).
import type { PrismaClient } from "../db/client.ts";
import type { Module } from "../http/module.ts";
import type { OutboundGuard } from "../outbound/index.ts";
import type { RenderPool } from "../templates/index.ts";
import { applyRoutes } from "./routes.ts";

export function createApply(deps: { prisma: PrismaClient; guard: OutboundGuard; liquid: Pick<RenderPool, "syntaxIssues"> }) {
  return { module: { adminRoutes: applyRoutes(deps) } satisfies Module };
}
