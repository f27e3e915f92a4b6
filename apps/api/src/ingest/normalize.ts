// Turns validated wire events into rows: messageId, merged batch context, skew-corrected time,
// and the identity fields the store needs.
import { randomUUID } from "node:crypto";
import type { BatchEvent, EventType } from "@tidings/schema";
import { ApiError } from "../lib/errors.ts";

export interface NormalizedEvent {
  messageId: string;
  type: EventType;
  userId: string | null;
  anonymousId: string | null;
  /** The id the event was sent under: userId when present, else anonymousId (not resolved through identity links). */
  identityId: string;
  /** track: event name; page/screen: name. */
  event: string | null;
  eventTime: Date;
  receivedAt: Date;
  /** The event as stored (JSON text), batch context merged in. */
  payloadJson: string;
  traits: Record<string, unknown> | null;
  groupId: string | null;
  previousId: string | null;
}

export interface BatchLevel {
  context?: Record<string, unknown> | undefined;
  integrations?: Record<string, unknown> | undefined;
  sentAt?: string | undefined;
}

/**
 * Event time: receivedAt − (sentAt − originalTimestamp) when both are known (corrects the device
 * clock), else `timestamp`, else `originalTimestamp`, else receivedAt.
 */
export function eventTime(
  ev: { timestamp?: string; originalTimestamp?: string; sentAt?: string },
  batchSentAt: string | undefined,
  receivedAt: Date,
): Date {
  const sentAt = ev.sentAt ?? batchSentAt;
  if (sentAt && ev.originalTimestamp) {
    return new Date(receivedAt.getTime() - (Date.parse(sentAt) - Date.parse(ev.originalTimestamp)));
  }
  if (ev.timestamp) return new Date(Date.parse(ev.timestamp));
  if (ev.originalTimestamp) return new Date(Date.parse(ev.originalTimestamp));
  return receivedAt;
}

/** Earliest and latest event times we store; outside this a timestamp is surely wrong. */
export const MIN_TIME = Date.UTC(1970, 0, 1);
export const MAX_TIME = Date.UTC(9999, 11, 31);

export function normalizeEvent(
  ev: BatchEvent,
  type: EventType,
  batch: BatchLevel,
  receivedAt: Date,
  maxEventBytes: number,
  path: string,
): NormalizedEvent {
  const messageId = ev.messageId ?? randomUUID();
  // Copied key by key (cheaper than rest and spread on this hot path). A write key sent in the
  // body is a credential, never event data.
  const payload: Record<string, unknown> = {};
  const fields = ev as Record<string, unknown>;
  for (const k in fields) if (k !== "writeKey" && k !== "__proto__") payload[k] = fields[k];
  payload.type = type;
  payload.messageId = messageId;
  if (batch.context || ev.context) payload.context = { ...batch.context, ...ev.context };
  if (batch.integrations || ev.integrations) payload.integrations = { ...batch.integrations, ...ev.integrations };
  const payloadJson = JSON.stringify(payload);
  // A UTF-16 code unit takes at most 3 UTF-8 bytes: only long payloads need counting.
  if (payloadJson.length * 3 > maxEventBytes && Buffer.byteLength(payloadJson) > maxEventBytes) {
    throw new ApiError("PAYLOAD_TOO_LARGE", `An event exceeds ${maxEventBytes} bytes`, [
      { path, message: `event is larger than ${maxEventBytes} bytes` },
    ]);
  }
  const time = eventTime(ev, batch.sentAt, receivedAt);
  if (!(time.getTime() >= MIN_TIME && time.getTime() <= MAX_TIME)) {
    throw new ApiError("VALIDATION_FAILED", "Event time is out of range", [
      // A single-event body is the event itself: its field path has no prefix.
      { path: path === "(body)" ? "timestamp" : `${path}.timestamp`, message: "resolves to a time outside 1970–9999" },
    ]);
  }
  const userId = ev.userId ?? null;
  const anonymousId = ev.anonymousId ?? null;
  const e = ev as Record<string, unknown>;
  return {
    messageId,
    type,
    userId,
    anonymousId,
    identityId: (userId ?? anonymousId)!,
    event: type === "track" ? String(e.event) : type === "page" || type === "screen" ? ((e.name as string) ?? null) : null,
    eventTime: time,
    receivedAt,
    payloadJson,
    traits: type === "identify" || type === "group" ? ((e.traits as Record<string, unknown>) ?? {}) : null,
    groupId: type === "group" ? String(e.groupId) : null,
    previousId: type === "alias" ? String(e.previousId) : null,
  };
}
