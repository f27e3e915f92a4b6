// Public ingestion routes, mounted at /api/public/apps/* and at /v1/* for Segment libraries.
import { EventType } from "@tidings/schema";
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import { writeKeyGuard } from "../auth/guards.ts";
import type { AppContext } from "../http/context.ts";
import { registerIngestBodyParser } from "./body.ts";
import type { NormalizedEvent } from "./normalize.ts";
import { parseBatch, parseSingle } from "./service.ts";

export const ingestRoutes: FastifyPluginAsync<{ ctx: AppContext }> = async (app, { ctx }) => {
  const { limits } = ctx.config;
  registerIngestBodyParser(app, limits.maxRequestBytes);
  const requireWriteKey = writeKeyGuard(ctx.keys);

  const accept = async (request: FastifyRequest, events: NormalizedEvent[]) => {
    await ctx.ingestor.ingest(request.principal!.workspaceId, events);
    ctx.metrics.eventsReceived.inc(events.length);
  };

  for (const prefix of ["/api/public/apps", "/v1"]) {
    for (const kind of EventType.options) {
      app.post(`${prefix}/${kind}`, { preHandler: requireWriteKey }, async (request, reply) => {
        await accept(request, [parseSingle(kind, request.body, limits, new Date())]);
        return reply.status(204).send();
      });
    }
    app.post(`${prefix}/batch`, { preHandler: requireWriteKey }, async (request, reply) => {
      await accept(request, parseBatch(request.body, limits, new Date()));
      return reply.status(204).send();
    });
  }
};
