// What every channel sender takes and answers. A sender speaks one provider's real protocol;
// the delivery pipeline (senders.ts, send-chunk.ts) claims rows, renders, calls `send` and marks the
// outcome. Senders never touch the database.

import type { EmailRendered } from "../../templates/index.ts";

export type { EmailRendered };

/** One message to send, rendered. */
export interface OutgoingMessage<Rendered = Record<string, unknown>> {
  /** The delivery's id: the idempotency key (webhook-id, Expo/FCM/Twilio where they take one). */
  deliveryId: string;
  workspaceId: string;
  userId: string;
  /** The contact point: email address, phone number (E.164), device/Expo push token; for webhooks the rendered URL. */
  to: string;
  rendered: Rendered;
  /** Email of a subscription group: the one-click unsubscribe URL (List-Unsubscribe, RFC 8058). */
  unsubscribeUrl?: string;
}

export interface SmsRendered {
  body: string;
}
export interface PushRendered {
  title: string;
  body: string;
  imageUrl?: string;
  data?: Record<string, string>;
}
export interface WebhookRendered {
  url: string;
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  headers?: Record<string, string>;
  body?: string;
}

/** The provider accepted the message. */
export interface Sent {
  status: "sent";
  providerMessageId?: string;
}
/** Will not succeed if retried (bad address, unregistered device, 4xx): recorded as Failed. */
export interface PermanentFailure {
  status: "failed";
  reason: string;
}
/** May succeed later (timeout, connection error, 429, 5xx): retried with backoff. */
export interface TransientFailure {
  status: "retry";
  reason: string;
  /** The provider's Retry-After, when it gave one. */
  retryAfterMs?: number;
}
export type SendOutcome = Sent | PermanentFailure | TransientFailure;

/** Where a sender reports provider trouble no single outcome carries (a pool's connection errors). */
export type SenderLog = (level: "warn" | "error", message: string) => void;

/**
 * Asked just before a message goes on the wire: false when it must not go (the claim on its row
 * was lost). The pipeline neither marks nor counts such a message.
 */
export type MayGo = (message: OutgoingMessage<unknown>) => boolean;

/**
 * A channel provider's sender. `send` takes a batch (Expo sends up to 100 per request; the others
 * may send one by one, with bounded concurrency) and answers one outcome per message, in order.
 * It never throws for a provider's answer; it throws only for a bug.
 */
export interface ChannelSender<Rendered, Config> {
  /** `mayGo` is asked just before each message goes on the wire (send-each.ts); one it refuses is NOT_SENT. */
  send(messages: OutgoingMessage<Rendered>[], config: Config, mayGo?: MayGo): Promise<SendOutcome[]>;
  /** Releases pooled connections and cached tokens. */
  close?(): Promise<void>;
}
