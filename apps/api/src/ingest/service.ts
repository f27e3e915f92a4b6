// Validates an ingestion request body and hands its events to the group committer.
import { type BatchEvent, BatchRequestBody, type EventType, singleEventBodies } from "@tidings/schema";
import type { Config } from "../config.ts";
import { ApiError, badRequest, zodIssues } from "../lib/errors.ts";
import { type BatchLevel, type NormalizedEvent, normalizeEvent } from "./normalize.ts";

type Limits = Config["limits"];

function asObject(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== "object" || Array.isArray(body)) throw badRequest("Body must be a JSON object");
  return body as Record<string, unknown>;
}

/** A single-event endpoint's body: `type` may be omitted, and when present must match the path. */
export function parseSingle(kind: EventType, body: unknown, limits: Limits, receivedAt: Date): NormalizedEvent {
  const obj = asObject(body);
  if (obj.type !== undefined && obj.type !== kind) {
    throw badRequest(`type must be ${JSON.stringify(kind)} on this endpoint`, [{ path: "type", message: `expected "${kind}"` }]);
  }
  const parsed = singleEventBodies[kind].safeParse(obj);
  if (!parsed.success) throw badRequest(`Invalid ${kind} event`, zodIssues(parsed.error));
  return normalizeEvent(parsed.data as BatchEvent, kind, {}, receivedAt, limits.maxEventBytes, "(body)");
}

/** A batch body: if any item is invalid nothing is accepted, and issues name each bad item. */
export function parseBatch(body: unknown, limits: Limits, receivedAt: Date): NormalizedEvent[] {
  const obj = asObject(body);
  if (Array.isArray(obj.batch) && obj.batch.length > limits.maxBatchEvents) {
    throw new ApiError("PAYLOAD_TOO_LARGE", `A batch may hold at most ${limits.maxBatchEvents} events`, [
      { path: "batch", message: `${obj.batch.length} events` },
    ]);
  }
  const parsed = BatchRequestBody.safeParse(obj);
  if (!parsed.success) throw badRequest("Invalid batch", zodIssues(parsed.error));
  const { batch, context, integrations, sentAt } = parsed.data;
  const level: BatchLevel = { context, integrations, sentAt };
  return batch.map((ev, i) => normalizeEvent(ev, ev.type as EventType, level, receivedAt, limits.maxEventBytes, `batch.${i}`));
}
