// Serves the OpenAPI document generated from @tidings/schema at /openapi.json, and an API
// reference page at /docs (Swagger UI; every asset comes from node_modules, nothing from a CDN).
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import { buildOpenApiDocument } from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";

export const openApiRoutes: FastifyPluginAsync = async (app) => {
  const doc = buildOpenApiDocument();
  app.get("/openapi.json", { schema: { hide: true } }, async () => doc);

  // Static mode: @fastify/swagger only hands the same document to the UI (at /docs/json); it
  // does not generate anything from the routes.
  await app.register(swagger, { mode: "static", specification: { document: doc as never } });
  await app.register(swaggerUi, {
    routePrefix: "/docs",
    theme: { title: "Tidings API reference" },
    // The validator badge stays off (validatorUrl unset): the page calls no outside service.
    uiConfig: { deepLinking: true, docExpansion: "list", defaultModelsExpandDepth: 0 },
  });
};
