// The shape every capability offers the composition root (app/): what it adds to the HTTP server
// and what it holds until shutdown. Jobs and metrics it registers itself, on the job layer and the
// registry it is built with.
import type { FastifyPluginAsync } from "fastify";

export interface Module {
  /** Routes outside the admin API (ingestion, the unsubscribe page), registered at the root. */
  publicRoutes?: FastifyPluginAsync;
  /** Routes of the admin API: each is authenticated by its contract's key kind. */
  adminRoutes?: FastifyPluginAsync;
  /** Releases what the module holds (pools, threads, connections), once the job layer stopped. */
  close?(): Promise<void>;
}

/** Several route plugins as one (a capability with two route files). */
export const routesOf =
  (...plugins: FastifyPluginAsync[]): FastifyPluginAsync =>
  async (app) => {
    for (const plugin of plugins) await app.register(plugin);
  };
