// The web console (apps/console), served at /console: its built files with a strict
// Content-Security-Policy (nothing from another origin, no inline script). The page talks to the
// admin API of this same server. Without a build, /console says how to make one.
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import fastifyStatic from "@fastify/static";
import type { FastifyPluginAsync } from "fastify";

/** Where the console is served (a page and its files, not an API operation: no contract). */
export const CONSOLE_PATH = "/console";

export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

const here = path.dirname(fileURLToPath(import.meta.url));

/** The given directory, else the first built console: beside the server (the image's /app/console), or in the repository. */
export function findConsole(given: string | undefined): string | undefined {
  const places = given
    ? [given]
    : [path.join(here, "../console"), path.join(here, "../../console/dist"), path.join(here, "../../../console/dist")];
  return places.find((dir) => existsSync(path.join(dir, "index.html")));
}

export const consoleRoutes =
  (given: string | undefined): FastifyPluginAsync =>
  async (app) => {
    const root = findConsole(given);
    app.get(CONSOLE_PATH, { schema: { hide: true } }, (_req, reply) => reply.redirect(`${CONSOLE_PATH}/`));
    if (!root) {
      app.get(`${CONSOLE_PATH}/*`, { schema: { hide: true } }, (_req, reply) =>
        reply
          .code(404)
          .type("text/plain; charset=utf-8")
          .send(
            "The console is not built here: run `pnpm build` (or `pnpm start`, which builds what changed), or set TIDINGS_CONSOLE_DIR.",
          ),
      );
      return;
    }
    await app.register(async (scope) => {
      scope.addHook("onSend", async (_req, reply, payload) => {
        reply.header("content-security-policy", CONSOLE_CSP);
        reply.header("x-content-type-options", "nosniff");
        reply.header("referrer-policy", "no-referrer");
        return payload;
      });
      await scope.register(fastifyStatic, {
        root,
        prefix: `${CONSOLE_PATH}/`,
        index: ["index.html"],
        // Hashed asset names never change; the page itself is always checked again.
        setHeaders: (res, file) =>
          res.header("cache-control", file.includes(`${path.sep}assets${path.sep}`) ? "public, max-age=31536000, immutable" : "no-cache"),
      });
    });
  };
