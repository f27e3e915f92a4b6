// The web toolkit's app factory: a Fastify instance with the one error model, JSON bodies, request
// ids and logs, the overload guard and a clean close. It knows no capability: the composition root
// (app/http.ts) registers their routes on it.
import { randomUUID } from "node:crypto";
import underPressure from "@fastify/under-pressure";
import Fastify, { type FastifyInstance, type FastifyRequest, type onRouteHookHandler } from "fastify";
import { serializerCompiler, validatorCompiler } from "fastify-type-provider-zod";
import { ApiError } from "../lib/errors.ts";
import { frameworkErrorHandler, registerErrorHandling, sendError } from "./errors.ts";
import { registerJsonBodyParser } from "./json-body.ts";

export interface HttpAppOptions {
  logLevel: string;
  /** Event-loop lag (ms) beyond which requests get 503 + Retry-After; 0: no guard. */
  maxEventLoopDelayMs: number;
  /** Called for every route as it is registered (the contract drift test lists them with it). */
  onRoute?: onRouteHookHandler;
  /** Where the request log goes (default stdout); tests read it. */
  logStream?: { write(line: string): void };
}

/**
 * A request URL as logged: the query string's values are left out (an unsubscribe link's token, a
 * key some client put in a query), its names kept.
 */
export function loggedUrl(url: string): string {
  const at = url.indexOf("?");
  if (at < 0) return url;
  const names = url
    .slice(at + 1)
    .split("&")
    .filter(Boolean)
    .map((pair) => `${pair.split("=")[0]}=…`);
  return `${url.slice(0, at)}?${names.join("&")}`;
}

export async function createHttpApp(options: HttpAppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: {
      level: options.logLevel,
      serializers: {
        req: (req: FastifyRequest) => ({ method: req.method, url: loggedUrl(req.url), remoteAddress: req.ip }),
      },
      ...(options.logStream ? { stream: options.logStream } : {}),
    },
    requestIdHeader: "x-request-id",
    genReqId: () => randomUUID(),
    // Closing waits for in-flight requests; idle keep-alive sockets are closed at once.
    forceCloseConnections: "idle",
    // While closing, requests still on open connections are answered normally (each response then
    // says `Connection: close`); Fastify's own 503 would carry neither our envelope nor Retry-After.
    return503OnClosing: false,
    // userIds may be 255 characters, more once percent-encoded.
    routerOptions: { maxParamLength: 1024 },
    frameworkErrors: frameworkErrorHandler,
  });
  if (options.onRoute) app.addHook("onRoute", options.onRoute);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerErrorHandling(app);
  registerJsonBodyParser(app);
  // Callback-style hooks here and in metrics.ts: no promise per request.
  app.addHook("onRequest", (request, reply, done) => {
    reply.header("x-request-id", request.id);
    done();
  });
  registerClosing(app);
  await app.register(underPressure, {
    maxEventLoopDelay: options.maxEventLoopDelayMs,
    exposeStatusRoute: false,
    pressureHandler: (request, reply) => {
      sendError(reply, request, new ApiError("UNAVAILABLE", "The server is overloaded; retry later", undefined, { "retry-after": "2" }));
    },
  });
  return app;
}

/**
 * Once closing, every response says `Connection: close`: a keep-alive client whose request was in
 * flight would otherwise hold its connection open, and close() would wait for it forever.
 */
function registerClosing(app: FastifyInstance) {
  let closing = false;
  app.addHook("preClose", (done) => {
    closing = true;
    done();
  });
  app.addHook("onSend", (_request, reply, payload, done) => {
    if (closing) reply.header("connection", "close");
    done(null, payload);
  });
}
