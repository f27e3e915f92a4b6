// What the ingestion client takes and reports: the event shapes (derived from the ingestion
// contracts), its options with their defaults, its counters, and the local checks on an event.
import type { ContractBody, ContractOf, ErrorIssue, EventType, JsonObject } from "@tidings/schema";
import type { TidingsApiError } from "../errors.js";
import type { FetchLike } from "../http.js";

// Derived from the ingestion contracts' bodies; `type` is set by the method, and alias's `userId`
// is restated because the schema's inferred input type loses it.
type Without<E, K extends string> = { [P in keyof E as P extends K ? never : P]: E[P] };
type EventBody<K extends EventType, Drop extends string = never> = Without<ContractBody<ContractOf<`ingest.v1.${K}`>>, "type" | Drop> & {
  type?: K;
};
/** What `identify` takes (the Segment spec): `userId` or `anonymousId`, `traits`, … */
export type IdentifyEvent = EventBody<"identify">;
/** What `track` takes: `event`, `properties`, `userId` or `anonymousId`, … */
export type TrackEvent = EventBody<"track">;
export type PageEvent = EventBody<"page">;
export type ScreenEvent = EventBody<"screen">;
export type GroupEvent = EventBody<"group">;
export type AliasEvent = EventBody<"alias", "userId"> & { userId: string | number };

/** An event with its `type`, as `sendBatch` takes it (a `messageId` is added when it has none). */
export type TidingsEventInput =
  | (IdentifyEvent & { type: "identify" })
  | (TrackEvent & { type: "track" })
  | (PageEvent & { type: "page" })
  | (ScreenEvent & { type: "screen" })
  | (GroupEvent & { type: "group" })
  | (AliasEvent & { type: "alias" });

/** An event as queued: with its `type` and the `messageId` it keeps across retries. */
export type TidingsEvent = TidingsEventInput & { messageId: string };

/** One event of a `sendBatch` call that was not stored, and why. */
export interface BatchEventError {
  /** Position of the event in the array given to `sendBatch`. */
  index: number;
  /**
   * Its `issues` are those naming this event, with paths relative to it (`event`, `traits.email`,
   * `(event)` for the event as a whole); none when the request was refused as a whole.
   */
  error: TidingsApiError;
}

/** What became of the events given to `sendBatch`; each is counted in exactly one of the three. */
export interface BatchResult {
  /** Acknowledged by the server: stored now, or stored before under the same messageId. */
  accepted: number;
  /** Refused for what they hold, by the server (400, 413) or locally (status 0): sent again unchanged, they would be refused again. */
  rejected: BatchEventError[];
  /**
   * Not delivered: the key was refused, the server still failed or could not be reached after the
   * retries, or the client was closed. Sent again later, they may be stored.
   */
  undelivered: BatchEventError[];
}

/** Called with each failure and the events it concerns; the events are not sent. */
export type IngestErrorHandler = (error: TidingsApiError, events: TidingsEvent[]) => void;

export interface TidingsOptions {
  /** A write key of the workspace (sent as `Authorization: Basic base64(writeKey:)`). */
  writeKey: string;
  /** Base URL of the server, e.g. `https://tidings.example.com` (a path prefix is kept). */
  host: string;
  /** Path of the batch endpoint. Default `/v1/batch`. */
  path?: string;
  /** A batch is sent once it holds this many events. Default 100 (the server takes up to 2 500). */
  maxBatchEvents?: number;
  /** A request body never exceeds this many bytes (uncompressed). Default 480 KiB, under the server's 500 KB. */
  maxBatchBytes?: number;
  /** Larger events are refused locally (PAYLOAD_TOO_LARGE). Default 32 KiB, the server's limit. */
  maxEventBytes?: number;
  /** A partial batch is sent this long after its oldest event was queued. Default 1000 ms. */
  flushIntervalMs?: number;
  /** Events held at once (queued, in flight, retrying); more are refused with QUEUE_FULL. Default 10 000. */
  maxQueueEvents?: number;
  /** Batches sent concurrently. Default 4. */
  maxInFlight?: number;
  /** Retries per batch after the first attempt. Default 6. */
  maxRetries?: number;
  /** Backoff base: retry n waits a random time in [0, min(retryMaxDelayMs, retryBaseDelayMs · 2ⁿ)). Default 250 ms. */
  retryBaseDelayMs?: number;
  /** Backoff cap. Default 30 000 ms. A server's Retry-After is honoured instead (up to 300 s). */
  retryMaxDelayMs?: number;
  /** Per request. Default 15 000 ms. */
  timeoutMs?: number;
  /**
   * Longest `close()` waits for events to be acknowledged (a server down or not answering); then
   * the requests and retries under way stop and the events not delivered reach onError
   * (`NETWORK`). Default 10 000 ms.
   */
  closeTimeoutMs?: number;
  /** Bodies of at least this many bytes are gzip-compressed; `false` never compresses. Default 64 KiB. */
  gzipMinBytes?: number | false;
  /** Merged under every event's `context` by the server (the event's own keys win). */
  context?: JsonObject;
  /** Failures: events refused locally or by the server, or still failing after the retries. Default: a console warning. */
  onError?: IngestErrorHandler;
  /** A `fetch` to use instead of undici (edge runtimes, tests, instrumentation). */
  fetch?: FetchLike;
}

/** The defaults of `TidingsOptions`. */
export const INGEST_DEFAULTS = {
  path: "/v1/batch",
  maxBatchEvents: 100,
  maxBatchBytes: 480 * 1024,
  maxEventBytes: 32 * 1024,
  flushIntervalMs: 1000,
  maxQueueEvents: 10_000,
  maxInFlight: 4,
  maxRetries: 6,
  retryBaseDelayMs: 250,
  retryMaxDelayMs: 30_000,
  timeoutMs: 15_000,
  closeTimeoutMs: 10_000,
  gzipMinBytes: 64 * 1024,
} as const;

export interface TidingsStats {
  /** Waiting to be sent. */
  queued: number;
  /** In requests not yet answered, or waiting to be retried. */
  inFlight: number;
  /** Acknowledged by the server (2xx). */
  sent: number;
  /** Reported to onError. */
  failed: number;
}

export const missing = (v: unknown) => v === undefined || v === null || v === "";

/** The checks that would otherwise make the server refuse a whole batch for one event. */
export function localIssues(type: EventType, ev: Record<string, unknown>): ErrorIssue[] {
  const issues: ErrorIssue[] = [];
  if (type === "alias") {
    if (missing(ev.userId)) issues.push({ path: "userId", message: "required" });
    if (missing(ev.previousId)) issues.push({ path: "previousId", message: "required" });
  } else if (missing(ev.userId) && missing(ev.anonymousId)) {
    issues.push({ path: "userId", message: "userId or anonymousId is required" });
  }
  if (type === "track" && (typeof ev.event !== "string" || ev.event === "")) issues.push({ path: "event", message: "required" });
  if (type === "group" && missing(ev.groupId)) issues.push({ path: "groupId", message: "required" });
  if (typeof ev.messageId === "string" && (ev.messageId.length === 0 || ev.messageId.length > 100)) {
    issues.push({ path: "messageId", message: "must be 1–100 characters" });
  }
  return issues;
}
