// Public ingestion: seven kinds of POST at /api/public/apps/* and, for Segment libraries, at /v1/*.
// The handlers parse the bodies themselves (issue paths per batch item, size limits), so the body
// schemas are documented here but not run by the framework.
import type { z } from "zod";
import {
  AliasRequestBody,
  BatchRequestBody,
  GroupRequestBody,
  IdentifyRequestBody,
  PageRequestBody,
  ScreenRequestBody,
  TrackRequestBody,
} from "../events.js";
import { defineContract, ingestErrors } from "./contract.js";

const BROWSERS =
  " Browsers may call it from any origin (CORS; the server's `TIDINGS_CORS_ORIGINS` can narrow that), also with `navigator.sendBeacon` and a `text/plain` body carrying `writeKey`.";

const committed = { status: 204, description: "Committed." } as const;

/** The seven operations under one prefix; `ns` prefixes their operationIds. */
function underPrefix<const Ns extends string, const P extends string>(ns: Ns, prefix: P) {
  const single = <const K extends string, const B extends z.ZodType>(kind: K, body: B) =>
    defineContract({
      operationId: `${ns}.${kind}` as `${Ns}.${K}`,
      method: "POST",
      path: `${prefix}/${kind}` as `${P}/${K}`,
      auth: "write",
      tags: ["Ingestion"],
      summary: `Submit ${/^[aeiou]/.test(kind) ? "an" : "a"} ${kind} event`,
      description:
        "Answers 204 once the event is committed. A replayed messageId is acknowledged and stored once. Bodies may be gzip-encoded (`Content-Encoding: gzip`) whatever their content type. Limits: 32 KB per event, 500 KB per request." +
        BROWSERS,
      body,
      validateBody: false,
      success: committed,
      errors: ingestErrors,
    });
  return [
    single("identify", IdentifyRequestBody),
    single("track", TrackRequestBody),
    single("page", PageRequestBody),
    single("screen", ScreenRequestBody),
    single("group", GroupRequestBody),
    single("alias", AliasRequestBody),
    defineContract({
      operationId: `${ns}.batch` as `${Ns}.batch`,
      method: "POST",
      path: `${prefix}/batch` as `${P}/batch`,
      auth: "write",
      tags: ["Ingestion"],
      summary: "Submit several events",
      description:
        "Answers 204 once every event is committed; if any item is invalid nothing is stored and `issues` names each bad item (e.g. `batch.3.event`). Limits: 2 500 events, 32 KB per event, 500 KB per request." +
        BROWSERS,
      body: BatchRequestBody,
      validateBody: false,
      success: committed,
      errors: ingestErrors,
    }),
  ] as const;
}

export const ingestContracts = [...underPrefix("ingest", "/api/public/apps"), ...underPrefix("ingest.v1", "/v1")] as const;
