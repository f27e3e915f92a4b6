// Public ingestion routes, mounted at /api/public/apps/* and at /v1/* for Segment libraries.
import rateLimit from "@fastify/rate-limit";
import { EventType } from "@tidings/schema";
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import { writeKeyGuard } from "../auth/guards.ts";
import type { AppContext } from "../http/context.ts";
import { registerIngestCors } from "../http/cors.ts";
import { ApiError } from "../http/errors.ts";
import { registerIngestBodyParser } from "./body.ts";
import type { NormalizedEvent } from "./normalize.ts";
import { parseBatch, parseSingle } from "./service.ts";

export const ingestRoutes: FastifyPluginAsync<{ ctx: AppContext }> = async (app, { ctx }) => {
  const { limits } = ctx.config;
  registerIngestBodyParser(app, limits.maxRequestBytes);
  // The key is checked once the body is parsed (it may carry `writeKey`), before rate limiting.
  app.addHook("preValidation", writeKeyGuard(ctx.keys));
  if (limits.requestsPerSecond > 0) {
    await app.register(rateLimit, {
      hook: "preHandler",
      max: limits.requestsPerSecond,
      timeWindow: 1000,
      keyGenerator: (request) => request.principal!.workspaceId,
      errorResponseBuilder: (_request, context) =>
        new ApiError("RATE_LIMITED", `The workspace exceeded ${context.max} requests per second; retry after ${context.after}`),
    });
  }

  const accept = async (request: FastifyRequest, events: NormalizedEvent[]) => {
    await ctx.ingestor.ingest(request.principal!.workspaceId, events);
    ctx.metrics.eventsReceived.inc(events.length);
  };

  // One child instance per prefix, so CORS (browsers) covers exactly these routes; the body
  // parser, key guard and rate limit above are inherited, the limit's store shared by both.
  for (const prefix of ["/api/public/apps", "/v1"]) {
    await app.register(
      async (routes) => {
        await registerIngestCors(routes, ctx.config.corsOrigins);
        for (const kind of EventType.options) {
          routes.post(`/${kind}`, async (request, reply) => {
            await accept(request, [parseSingle(kind, request.body, limits, new Date())]);
            return reply.status(204).send();
          });
        }
        routes.post("/batch", async (request, reply) => {
          await accept(request, parseBatch(request.body, limits, new Date()));
          return reply.status(204).send();
        });
      },
      { prefix },
    );
  }
};
