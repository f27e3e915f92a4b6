// The app factory: builds a Fastify instance from a context. Tests call it with inject() or
// listen on 127.0.0.1; main.ts calls it for the real server.
import { randomUUID } from "node:crypto";
import underPressure from "@fastify/under-pressure";
import Fastify, { type FastifyInstance, type FastifyRequest, type onRouteHookHandler } from "fastify";
import { serializerCompiler, validatorCompiler } from "fastify-type-provider-zod";
import { applyRoutes } from "../apply/routes.ts";
import { registerAdminAuth } from "../auth/admin-plugin.ts";
import { authRoutes } from "../auth/routes.ts";
import { broadcastRoutes } from "../broadcasts/routes.ts";
import { ingestRoutes } from "../ingest/routes.ts";
import { journeyRoutes } from "../journeys/routes.ts";
import { deliveryRoutes } from "../messaging/delivery-routes.ts";
import { providerRoutes } from "../messaging/providers/routes.ts";
import { unsubscribeRoutes } from "../subscription-groups/unsubscribe-routes.ts";
import { segmentRoutes } from "../segments/routes.ts";
import { subscriptionGroupRoutes } from "../subscription-groups/routes.ts";
import { templateRoutes } from "../templates/routes.ts";
import { userRoutes } from "../users/routes.ts";
import type { AppContext } from "../app/context.ts";
import { registerAdminCors } from "./cors.ts";
import { ApiError } from "../lib/errors.ts";
import { frameworkErrorHandler, registerErrorHandling, sendError } from "./errors.ts";
import { healthRoutes } from "./health.ts";
import { registerJsonBodyParser } from "./json-body.ts";
import { registerMetrics } from "./metrics.ts";
import { openApiRoutes } from "./openapi.ts";

export interface BuildOptions {
  /** Called for every route as it is registered (the contract drift test lists them with it). */
  onRoute?: onRouteHookHandler;
  /** Where the request log goes (default stdout); tests read it. */
  logStream?: { write(line: string): void };
}

/**
 * A request URL as logged: the query string's values are left out (an unsubscribe link's token, a
 * key some client put in a query), its names kept.
 */
export function loggedUrl(url: string): string {
  const at = url.indexOf("?");
  if (at < 0) return url;
  const names = url
    .slice(at + 1)
    .split("&")
    .filter(Boolean)
    .map((pair) => `${pair.split("=")[0]}=…`);
  return `${url.slice(0, at)}?${names.join("&")}`;
}

export async function buildApp(ctx: AppContext, options: BuildOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: {
      level: ctx.config.logLevel,
      serializers: {
        req: (req: FastifyRequest) => ({ method: req.method, url: loggedUrl(req.url), remoteAddress: req.ip }),
      },
      ...(options.logStream ? { stream: options.logStream } : {}),
    },
    requestIdHeader: "x-request-id",
    genReqId: () => randomUUID(),
    // Closing waits for in-flight requests; idle keep-alive sockets are closed at once.
    forceCloseConnections: "idle",
    // While closing, requests still on open connections are answered normally (each response then
    // says `Connection: close`); Fastify's own 503 would carry neither our envelope nor Retry-After.
    return503OnClosing: false,
    // userIds may be 255 characters, more once percent-encoded.
    routerOptions: { maxParamLength: 1024 },
    frameworkErrors: frameworkErrorHandler,
  });
  if (options.onRoute) app.addHook("onRoute", options.onRoute);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerErrorHandling(app);
  registerJsonBodyParser(app);
  // Callback-style hooks here and in metrics.ts: no promise per request.
  app.addHook("onRequest", (request, reply, done) => {
    reply.header("x-request-id", request.id);
    done();
  });
  registerMetrics(app, ctx.metrics);
  // Once closing, every response says `Connection: close`: a keep-alive client whose request was
  // in flight would otherwise hold its connection open, and close() would wait for it forever.
  let closing = false;
  app.addHook("preClose", (done) => {
    closing = true;
    done();
  });
  app.addHook("onSend", (_request, reply, payload, done) => {
    if (closing) reply.header("connection", "close");
    done(null, payload);
  });

  await app.register(underPressure, {
    maxEventLoopDelay: ctx.config.maxEventLoopDelayMs,
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
  await app.register(unsubscribeRoutes, { ctx });
  // The admin API in one instance, closed to browsers unless TIDINGS_ADMIN_CORS_ORIGINS opens it;
  // every route in it is authenticated by its contract's key kind, its workspace resolved once.
  await app.register(async (admin) => {
    await registerAdminCors(admin, ctx.config.adminCorsOrigins);
    registerAdminAuth(admin, ctx);
    await admin.register(authRoutes, { ctx });
    await admin.register(userRoutes, { ctx });
    await admin.register(journeyRoutes, { ctx });
    await admin.register(templateRoutes, { ctx });
    await admin.register(providerRoutes, { ctx });
    await admin.register(segmentRoutes, { ctx });
    await admin.register(subscriptionGroupRoutes, { ctx });
    await admin.register(broadcastRoutes, { ctx });
    await admin.register(deliveryRoutes, { ctx });
    await admin.register(applyRoutes, { ctx });
  });
  return app;
}
