// Serves the OpenAPI document generated from @tidings/schema at /openapi.json, and an API
// reference page at /docs (Swagger UI; every asset comes from node_modules, nothing from a CDN).
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import { buildOpenApiDocument } from "@tidings/schema";
import type { FastifyPluginAsync } from "fastify";

const logo = `<svg xmlns="http://www.w3.org/2000/svg" width="140" height="40"><text x="0" y="29" font-family="sans-serif" font-size="26" font-weight="600" fill="#fff">Tidings</text></svg>`;

export const openApiRoutes: FastifyPluginAsync = async (app) => {
  const doc = buildOpenApiDocument();
  app.get("/openapi.json", { schema: { hide: true } }, async () => doc);

  // Static mode: @fastify/swagger only hands the same document to the UI (at /docs/json); it
  // does not generate anything from the routes.
  await app.register(swagger, { mode: "static", specification: { document: doc as never } });
  await app.register(swaggerUi, {
    routePrefix: "/docs",
    theme: { title: "Tidings API reference" },
    logo: { type: "image/svg+xml", content: logo },
    // The validator badge stays off (validatorUrl unset): the page calls no outside service.
    uiConfig: { deepLinking: true, docExpansion: "list", defaultModelsExpandDepth: 0 },
  });
};
