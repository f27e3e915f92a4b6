// The admin API's one guard, installed on the instance that holds every /api/admin route: each
// route is authenticated by its contract's auth kind (an admin API key, or the root key), and an
// admin route's workspace is resolved once, here — the key's workspace; a `workspaceId` in the
// body or the query naming another one is a 403. Handlers receive it as `workspaceId`.
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler, preHandlerHookHandler } from "fastify";
import { ApiError } from "../lib/errors.ts";
import { adminGuard, rootGuard } from "./guards.ts";
import type { KeyStore } from "./keys.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** The workspace an admin route acts on; null elsewhere. */
    workspaceId: string | null;
  }
}

const asArray = <T>(hooks: T | T[] | undefined): T[] => (hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks]);

/** The workspace ids a request names in a `workspaceId` field of its body or query. */
function namedWorkspaces(request: FastifyRequest): unknown[] {
  const named: unknown[] = [];
  for (const source of [request.body, request.query]) {
    if (source === null || typeof source !== "object" || !("workspaceId" in source)) continue;
    const value = source.workspaceId;
    // An unvalidated query may repeat the parameter.
    if (Array.isArray(value)) named.push(...value);
    else if (value !== undefined && value !== null && value !== "") named.push(value);
  }
  return named;
}

function resolveWorkspace(request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) {
  const principal = request.principal;
  if (!principal) return done(new ApiError("UNAUTHORIZED", "Not authenticated"));
  for (const requested of namedWorkspaces(request)) {
    if (requested !== principal.workspaceId) {
      return done(new ApiError("FORBIDDEN", `This key may not act on workspace ${String(requested)}`));
    }
  }
  request.workspaceId = principal.workspaceId;
  done();
}

export function registerAdminAuth(admin: FastifyInstance, deps: { keys: KeyStore; rootKey: string }): void {
  admin.decorateRequest("workspaceId", null);
  const requireAdmin: onRequestHookHandler = adminGuard(deps.keys);
  const requireRoot: onRequestHookHandler = rootGuard(deps.rootKey);

  // Per route rather than per instance: the hooks go exactly on the contract routes (not on the
  // CORS preflight), and a route the admin API cannot guard stops the boot.
  admin.addHook("onRoute", (route) => {
    const contract = route.config?.contract;
    if (!contract) {
      if (route.method === "OPTIONS") return; // CORS preflight (cors.ts)
      throw new Error(`${String(route.method)} ${route.url}: admin routes are registered from a contract (http/route.ts)`);
    }
    if (contract.auth === "admin") {
      route.onRequest = [...asArray(route.onRequest), requireAdmin];
      route.preHandler = [resolveWorkspace as preHandlerHookHandler, ...asArray(route.preHandler)];
    } else if (contract.auth === "root") {
      route.onRequest = [...asArray(route.onRequest), requireRoot];
    } else {
      throw new Error(`${contract.operationId}: the admin API takes admin or root keys, not ${contract.auth}`);
    }
  });
}
