// Liveness and readiness probes.
import { contractsById as op } from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";
import { databaseUnavailable } from "../lib/errors.ts";
import { route } from "./route.ts";

/** `ready` answers once the database answers (it throws otherwise). */
export const healthRoutes =
  (ready: () => Promise<unknown>): FastifyPluginAsync =>
  async (app) => {
    route(app, op["health.live"], () => ({ status: "ok" as const }));
    route(app, op["health.ready"], async () => {
      try {
        await ready();
      } catch {
        throw databaseUnavailable();
      }
      return { status: "ok" as const };
    });
  };
