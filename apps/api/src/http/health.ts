// Liveness and readiness probes.
import { contractsById as op } from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";
import type { AppContext } from "../app/context.ts";
import { databaseUnavailable } from "../lib/errors.ts";
import { route } from "./route.ts";

export const healthRoutes: FastifyPluginAsync<{ ctx: AppContext }> = async (app, { ctx }) => {
  route(app, op["health.live"], () => ({ status: "ok" as const }));
  route(app, op["health.ready"], async () => {
    try {
      await ctx.db.pool.query("SELECT 1");
    } catch {
      throw databaseUnavailable();
    }
    return { status: "ok" as const };
  });
};
