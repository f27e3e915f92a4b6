// Public ingestion routes, mounted at /api/public/apps/* and at /v1/* for Segment libraries.
import rateLimit from "@fastify/rate-limit";
import { type ContractOf, contracts, type EventType } from "@tidings/schema";
import type { FastifyPluginAsync, FastifyRequest, preValidationHookHandler } from "fastify";
import type { ResolvedConfig } from "../config.ts";
import { registerIngestCors } from "../http/cors.ts";
import { ApiError } from "../lib/errors.ts";
import { route } from "../http/route.ts";
import { registerIngestBodyParser } from "./body.ts";
import type { Ingestor } from "./ingestor.ts";
import type { IngestMetrics } from "./metrics.ts";
import type { NormalizedEvent } from "./normalize.ts";
import { parseBatch, parseSingle } from "./service.ts";

type IngestContract = ContractOf<`ingest.${EventType | "batch"}` | `ingest.v1.${EventType | "batch"}`>;

/** The ingestion contracts under one prefix (`/api/public/apps` or `/v1`). */
const ingestContractsUnder = (prefix: string) =>
  contracts.filter((c): c is IngestContract => c.auth === "write" && c.path.startsWith(`${prefix}/`));

export interface IngestRouteDeps {
  ingestor: Ingestor;
  metrics: IngestMetrics;
  /** Finds the request's workspace from its write key (auth's guard); answers 401 without one. */
  writeKeyGuard: preValidationHookHandler;
  limits: ResolvedConfig["limits"];
  corsOrigins: ResolvedConfig["corsOrigins"];
}

export const ingestRoutes =
  (deps: IngestRouteDeps): FastifyPluginAsync =>
  async (app) => {
    const { limits } = deps;
    registerIngestBodyParser(app, limits.maxRequestBytes);
    // The key is checked once the body is parsed (it may carry `writeKey`), before rate limiting.
    app.addHook("preValidation", deps.writeKeyGuard);
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
      await deps.ingestor.ingest(request.principal!.workspaceId, events);
      deps.metrics.eventsReceived.inc(events.length);
    };

    // One child instance per prefix, so CORS (browsers) covers exactly these routes; the body
    // parser, key guard and rate limit above are inherited, the limit's store shared by both.
    // The handlers parse the bodies themselves (the contracts document them, unvalidated).
    for (const prefix of ["/api/public/apps", "/v1"]) {
      await app.register(
        async (routes) => {
          await registerIngestCors(routes, deps.corsOrigins);
          for (const contract of ingestContractsUnder(prefix)) {
            const kind = contract.path.slice(prefix.length + 1) as EventType | "batch";
            route(routes, contract, async ({ request, body }) => {
              const now = new Date();
              await accept(request, kind === "batch" ? parseBatch(body, limits, now) : [parseSingle(kind, body, limits, now)]);
            });
          }
        },
        { prefix },
      );
    }
  };
