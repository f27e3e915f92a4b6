// CORS for browsers: public ingestion answers pages of any origin (or TIDINGS_CORS_ORIGINS);
// the admin API answers none unless TIDINGS_ADMIN_CORS_ORIGINS lists some.
import cors from "@fastify/cors";
import type { FastifyInstance } from "fastify";

/** Browsers may cache a preflight answer this long (Chromium caps it at two hours). */
const PREFLIGHT_MAX_AGE_SECONDS = 7200;

/** What Segment's analytics.js, Dittofeed's browser SDK and ours send. */
export const INGEST_ALLOWED_HEADERS = ["Authorization", "Content-Type", "PublicWriteKey", "Content-Encoding"];
/** Readable by pages: the request id to quote in a report, and how long to wait after a 429/503. */
export const EXPOSED_HEADERS = ["x-request-id", "Retry-After"];

/**
 * CORS on an encapsulated instance (the plugin is not encapsulated itself). Its preflight route
 * is `<prefix>*`, so the instance must carry the prefix of the routes it opens.
 */
export async function registerIngestCors(app: FastifyInstance, origins: "*" | string[]): Promise<void> {
  await app.register(cors, {
    origin: origins,
    methods: ["POST"],
    allowedHeaders: INGEST_ALLOWED_HEADERS,
    exposedHeaders: EXPOSED_HEADERS,
    maxAge: PREFLIGHT_MAX_AGE_SECONDS,
  });
}

const ADMIN_PREFIX = "/api/admin/";

/**
 * CORS for the admin routes, registered on the instance that holds them; nothing at all without
 * origins. Admin paths carry no common prefix, so the plugin's preflight route is `*` and the
 * delegator turns CORS off (preflight: 404 as before) for every path outside /api/admin/.
 */
export async function registerAdminCors(app: FastifyInstance, origins: string[]): Promise<void> {
  if (origins.length === 0) return;
  const open = {
    origin: origins,
    methods: ["GET", "POST", "PUT", "DELETE"],
    allowedHeaders: ["Authorization", "Content-Type"],
    exposedHeaders: EXPOSED_HEADERS,
    maxAge: PREFLIGHT_MAX_AGE_SECONDS,
  };
  await app.register(cors, {
    delegator: (request, callback) => callback(null, request.url.startsWith(ADMIN_PREFIX) ? open : { origin: false }),
  });
}
