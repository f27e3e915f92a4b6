// Liveness and readiness probes.
import type { FastifyPluginAsync } from "fastify";
import type { AppContext } from "./context.ts";
import { ApiError } from "./errors.ts";

export const healthRoutes: FastifyPluginAsync<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.get("/health/live", async () => ({ status: "ok" as const }));
  app.get("/health/ready", async () => {
    try {
      await ctx.db.pool.query("SELECT 1");
    } catch {
      throw new ApiError("UNAVAILABLE", "Database unreachable", undefined, { "retry-after": "5" });
    }
    return { status: "ok" as const };
  });
};
