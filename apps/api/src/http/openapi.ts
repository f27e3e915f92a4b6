// Serves the OpenAPI document generated from @tidings/schema.
import { buildOpenApiDocument } from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";

export const openApiRoutes: FastifyPluginAsync = async (app) => {
  let doc: unknown;
  app.get("/openapi.json", async () => (doc ??= buildOpenApiDocument()));
};
