// Serves the OpenAPI document generated from the contracts of @tidings/schema at /openapi.json,
// and an API reference page at /docs (Swagger UI; every asset comes from node_modules, nothing
// from a CDN).
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import { contractsById as op } from "@tidings/schema";
import { buildOpenApiDocument } from "@tidings/schema/openapi";
import type { FastifyPluginAsync } from "fastify";
import { route } from "./route.ts";

const logo = `<svg xmlns="http://www.w3.org/2000/svg" width="140" height="40"><text x="0" y="29" font-family="sans-serif" font-size="26" font-weight="600" fill="#fff">Tidings</text></svg>`;

/** Where the reference page and its assets live; every route under it belongs to Swagger UI. */
export const DOCS_PREFIX = "/docs";

export const openApiRoutes: FastifyPluginAsync = async (app) => {
  const doc = buildOpenApiDocument();
  route(app, op["openapi.get"], () => doc);

  // Static mode: @fastify/swagger only hands the same document to the UI (at /docs/json); it
  // does not generate anything from the routes.
  await app.register(swagger, { mode: "static", specification: { document: doc as never } });
  await app.register(swaggerUi, {
    routePrefix: DOCS_PREFIX,
    theme: { title: "Tidings API reference" },
    logo: { type: "image/svg+xml", content: logo },
    // The validator badge stays off (validatorUrl unset): the page calls no outside service.
    uiConfig: { deepLinking: true, docExpansion: "list", defaultModelsExpandDepth: 0 },
  });
};
