// JSON request bodies of the admin API: Fastify's own parser (with its prototype-poisoning
// checks), except that an empty body is no body, so `DELETE` and bodiless `POST` requests from
// clients that always send `Content-Type: application/json` are not refused; and, as for
// ingestion, nothing PostgreSQL cannot store gets past it (a NUL in a name, an unpaired surrogate
// in a journey draft: 400 naming the field, not a 500 from the database or a name silently
// altered). Ingestion installs its own parser in its plugin and is not affected.
import type { FastifyInstance } from "fastify";
import { checkStorable } from "./storable.ts";

export function registerJsonBodyParser(app: FastifyInstance) {
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body: string, done) => {
    if (body.trim() === "") return done(null, undefined);
    parseJson(request, body, (err, parsed) => {
      if (err) return done(err);
      try {
        checkStorable(parsed);
      } catch (refused) {
        return done(refused as Error);
      }
      done(null, parsed);
    });
  });
}
