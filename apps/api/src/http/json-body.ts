// JSON request bodies of the admin API: Fastify's own parser (with its prototype-poisoning
// checks), except that an empty body is no body, so `DELETE` and bodiless `POST` requests from
// clients that always send `Content-Type: application/json` are not refused. Ingestion installs
// its own parser in its plugin and is not affected.
import type { FastifyInstance } from "fastify";

export function registerJsonBodyParser(app: FastifyInstance) {
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body: string, done) => {
    if (body.trim() === "") return done(null, undefined);
    parseJson(request, body, done);
  });
}
