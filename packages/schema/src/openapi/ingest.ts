// Public ingestion routes (also mounted at /v1 for Segment libraries).
import { BatchRequestBody, singleEventBodies } from "../events.js";
import { ingestErrors, ingestSecurity, json, registry } from "./registry.js";

const BROWSERS =
  " Browsers may call it from any origin (CORS; the server's `TIDINGS_CORS_ORIGINS` can narrow that), also with `navigator.sendBeacon` and a `text/plain` body carrying `writeKey`.";

export function registerIngestPaths() {
  for (const prefix of ["/api/public/apps", "/v1"]) {
    for (const [kind, body] of Object.entries(singleEventBodies)) {
      registry.registerPath({
        method: "post",
        path: `${prefix}/${kind}`,
        tags: ["Ingestion"],
        summary: `Submit a ${kind} event`,
        description:
          "Answers 204 once the event is committed. A replayed messageId is acknowledged and stored once. Bodies may be gzip-encoded (`Content-Encoding: gzip`) whatever their content type. Limits: 32 KB per event, 500 KB per request." + BROWSERS,
        security: ingestSecurity,
        request: { body: json(body) },
        responses: { 204: { description: "Committed." }, ...ingestErrors },
      });
    }
    registry.registerPath({
      method: "post",
      path: `${prefix}/batch`,
      tags: ["Ingestion"],
      summary: "Submit several events",
      description:
        "Answers 204 once every event is committed; if any item is invalid nothing is stored and `issues` names each bad item (e.g. `batch.3.event`). Limits: 2 500 events, 32 KB per event, 500 KB per request." + BROWSERS,
      security: ingestSecurity,
      request: { body: json(BatchRequestBody) },
      responses: { 204: { description: "Committed." }, ...ingestErrors },
    });
  }
}
