// Users: the read side over what ingestion stored (profiles, events, their segments and journey
// runs), and a user's erasure.
import type { PrismaClient } from "../db/client.ts";
import type { Module } from "../http/module.ts";
import { userRoutes } from "./routes.ts";

export function createUsers({ prisma }: { prisma: PrismaClient }) {
  return { module: { adminRoutes: userRoutes({ prisma }) } satisfies Module };
}
