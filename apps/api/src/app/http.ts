// The HTTP server of the composition root: the toolkit's app (http/), the probes, metrics and the
// OpenAPI document, the web console, each capability's public routes at the root, and their admin routes in one
// instance guarded by auth (CORS only where TIDINGS_ADMIN_CORS_ORIGINS opens it).
import type { FastifyInstance } from "fastify";
import { type HttpAppOptions, createHttpApp } from "../http/app.ts";
import { registerAdminCors } from "../http/cors.ts";
import { consoleRoutes } from "../http/console.ts";
import { healthRoutes } from "../http/health.ts";
import { registerMetrics } from "../http/metrics.ts";
import { openApiRoutes } from "../http/openapi.ts";
import type { System } from "./system.ts";

export type BuildOptions = Pick<HttpAppOptions, "onRoute" | "logStream">;

export async function buildApp(system: System, options: BuildOptions = {}): Promise<FastifyInstance> {
  const { config } = system;
  const app = await createHttpApp({ logLevel: config.logLevel, maxEventLoopDelayMs: config.maxEventLoopDelayMs, ...options });
  registerMetrics(app, system.registry);
  await app.register(healthRoutes(() => system.db.pool.query("SELECT 1")));
  // A worker process answers probes and metrics only; the API is served by `api`/`all`.
  if (config.role === "worker") return app;
  await app.register(openApiRoutes);
  await app.register(consoleRoutes(config.consoleDir));
  for (const m of system.modules) if (m.publicRoutes) await app.register(m.publicRoutes);
  await app.register(async (admin) => {
    await registerAdminCors(admin, config.adminCorsOrigins);
    system.auth.guardAdmin(admin);
    for (const m of system.modules) if (m.adminRoutes) await admin.register(m.adminRoutes);
  });
  return app;
}
