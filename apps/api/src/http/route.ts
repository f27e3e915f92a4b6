// The one way a route is added: from its contract in @tidings/schema. Method, url, the zod schemas
// that validate the request and serialize the response, and the success status all come from the
// contract; the handler receives the validated input (and, on an admin route, the workspace the
// admin plugin resolved) and returns the response body.
import type { Contract, ContractRequest, ContractResult } from "@tidings/schema";
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifySchema } from "fastify";

declare module "fastify" {
  interface FastifyContextConfig {
    /** The contract a route was registered from (read by the admin plugin and the drift test). */
    contract?: Contract;
  }
}

export interface RouteInput<C extends Contract> extends ContractRequest<C> {
  /** The workspace an admin route acts on: the key's, checked against any `workspaceId` sent. */
  workspaceId: C["auth"] extends "admin" ? string : undefined;
  request: FastifyRequest;
  reply: FastifyReply;
}

export type RouteHandler<C extends Contract> = (input: RouteInput<C>) => ContractResult<C> | Promise<ContractResult<C>>;

/** A contract's path in Fastify's form: `{id}` → `:id`. */
export const fastifyUrl = (path: string) => path.replace(/\{(\w+)\}/g, ":$1");

const isJson = (contentType: string | undefined) => contentType === undefined || /\bjson\b/.test(contentType);

export function route<C extends Contract>(app: FastifyInstance, contract: C, handler: RouteHandler<C>): void {
  // Admin and root routes are authenticated by the admin plugin (auth/admin-plugin.ts); outside
  // it they would answer without a key, so that is a boot error.
  if ((contract.auth === "admin" || contract.auth === "root") && !app.hasRequestDecorator("workspaceId")) {
    throw new Error(`${contract.operationId}: ${contract.auth} routes belong inside the admin plugin`);
  }
  const { status, schema: responseSchema, contentType } = contract.success;
  const schema: FastifySchema = {};
  if (contract.params) schema.params = contract.params;
  if (contract.query) schema.querystring = contract.query;
  if (contract.body && contract.validateBody !== false) schema.body = contract.body;
  // A text response (metrics) is sent as the handler returns it, not JSON-encoded.
  if (responseSchema && isJson(contentType)) schema.response = { [status]: responseSchema };

  // Contract paths are absolute; an instance with a prefix (ingestion's, for CORS) adds its own.
  const url = fastifyUrl(contract.path);
  if (!url.startsWith(`${app.prefix}/`)) throw new Error(`${contract.operationId}: ${contract.path} is outside ${app.prefix}`);

  app.route({
    method: contract.method,
    url: url.slice(app.prefix.length),
    schema,
    config: { contract },
    handler: async (request, reply) => {
      const input = {
        params: contract.params ? request.params : undefined,
        query: contract.query ? request.query : undefined,
        body: contract.body ? request.body : undefined,
        workspaceId: request.workspaceId ?? undefined,
        request,
        reply,
      } as unknown as RouteInput<C>;
      const result = await handler(input);
      if (reply.sent) return reply;
      return status === 204 ? reply.code(204).send() : reply.code(status).send(result);
    },
  });
}
