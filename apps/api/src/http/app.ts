// The app factory: builds a Fastify instance from a context. Tests call it with inject() or
// listen on 127.0.0.1; main.ts calls it for the real server.
import { randomUUID } from "node:crypto";
import underPressure from "@fastify/under-pressure";
import Fastify, { type FastifyInstance } from "fastify";
import { serializerCompiler, validatorCompiler } from "fastify-type-provider-zod";
import { authRoutes } from "../auth/routes.ts";
import { ingestRoutes } from "../ingest/routes.ts";
import { journeyRoutes } from "../journeys/routes.ts";
import { providerRoutes } from "../messaging/providers/routes.ts";
import { segmentRoutes } from "../segments/routes.ts";
import { subscriptionGroupRoutes } from "../subscription-groups/routes.ts";
import { templateRoutes } from "../templates/routes.ts";
import { userRoutes } from "../users/routes.ts";
import type { AppContext } from "./context.ts";
import { ApiError, frameworkErrorHandler, registerErrorHandling, sendError } from "./errors.ts";
import { healthRoutes } from "./health.ts";
import { registerMetrics } from "./metrics.ts";
import { openApiRoutes } from "./openapi.ts";

export async function buildApp(ctx: AppContext): Promise<FastifyInstance> {
  const app = Fastify({
    logger: { level: ctx.config.logLevel },
    requestIdHeader: "x-request-id",
    genReqId: () => randomUUID(),
    // Closing waits for in-flight requests; idle keep-alive sockets are closed at once.
    forceCloseConnections: "idle",
    return503OnClosing: true,
    // userIds may be 255 characters, more once percent-encoded.
    routerOptions: { maxParamLength: 1024 },
    frameworkErrors: frameworkErrorHandler,
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerErrorHandling(app);
  // Callback-style hooks here and in metrics.ts: no promise per request.
  app.addHook("onRequest", (request, reply, done) => {
    reply.header("x-request-id", request.id);
    done();
  });
  registerMetrics(app, ctx.metrics);

  await app.register(underPressure, {
    maxEventLoopDelay: 1000,
    exposeStatusRoute: false,
    pressureHandler: (request, reply) => {
      sendError(reply, request, new ApiError("UNAVAILABLE", "The server is overloaded; retry later", undefined, { "retry-after": "2" }));
    },
  });

  await app.register(healthRoutes, { ctx });
  // A worker process answers probes and metrics only; the API is served by `api`/`all`.
  if (ctx.config.role === "worker") return app;
  await app.register(openApiRoutes);
  await app.register(ingestRoutes, { ctx });
  await app.register(authRoutes, { ctx });
  await app.register(userRoutes, { ctx });
  await app.register(journeyRoutes, { ctx });
  await app.register(templateRoutes, { ctx });
  await app.register(providerRoutes, { ctx });
  await app.register(segmentRoutes, { ctx });
  await app.register(subscriptionGroupRoutes, { ctx });
  return app;
}
