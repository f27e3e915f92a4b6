// Push through Expo's push service:
//   POST {baseUrl}/--/api/v2/push/send   Content-Type: application/json
//   [optional] Authorization: Bearer <access token> (enhanced push security)
//   body: an array of at most 100 messages {to, title, body, data?, richContent?: {image}}
// A 200 answers {data: [ticket…]}, one ticket per message in order: {status: "ok", id} or
// {status: "error", message, details: {error: "DeviceNotRegistered" | …}}. A failed request
// answers {errors: [{code, message}]} with a 4xx/5xx status.
// Tickets only say Expo accepted the message; delivery receipts (push/getReceipts) come later.
import type { ExpoConfig } from "@tidings/schema";
import pMap from "p-map";
import type { OutboundGuard } from "../../outbound/index.ts";
import { clip, DEFAULT_TIMEOUT_MS, isTransientStatus, joinUrl, noAnswerOutcome, ProviderHttp, transient } from "./provider-http.ts";
import { NOT_SENT } from "./send-each.ts";
import type { ChannelSender, MayGo, OutgoingMessage, PushRendered, SendOutcome } from "./types.ts";

export const EXPO_DEFAULT_BASE_URL = "https://exp.host";
/** Expo's limit of messages in one push/send request. */
export const EXPO_MAX_MESSAGES_PER_REQUEST = 100;
/** Ticket errors that may pass on a later attempt; the others are final. */
const TRANSIENT_TICKET_ERRORS = new Set(["MessageRateExceeded", "ExpoError", "ProviderError"]);

export interface ExpoSenderOptions {
  /** Every destination (the base URL) goes through it. */
  guard: OutboundGuard;
  /** Requests (of up to 100 messages) in flight at once per `send` call (default 6, as Expo's SDK). */
  concurrency?: number;
  /** Deadline of one request, answer body included (default 15 s). */
  timeoutMs?: number;
}

/** An Expo push token: ExponentPushToken[…], ExpoPushToken[…] or a bare UUID (as Expo's SDK checks). */
export function isExpoPushToken(token: string): boolean {
  return (
    ((token.startsWith("ExponentPushToken[") || token.startsWith("ExpoPushToken[")) && token.endsWith("]")) ||
    /^[a-z\d]{8}-[a-z\d]{4}-[a-z\d]{4}-[a-z\d]{4}-[a-z\d]{12}$/i.test(token)
  );
}

/** The message of Expo's push/send request body for one outgoing message. */
export function toExpoMessage(m: OutgoingMessage<PushRendered>): Record<string, unknown> {
  const message: Record<string, unknown> = { to: m.to, title: m.rendered.title, body: m.rendered.body };
  if (m.rendered.data && Object.keys(m.rendered.data).length > 0) message.data = m.rendered.data;
  if (m.rendered.imageUrl) message.richContent = { image: m.rendered.imageUrl };
  return message;
}

export class ExpoSender implements ChannelSender<PushRendered, ExpoConfig> {
  private readonly concurrency: number;
  private readonly timeoutMs: number;
  private readonly http: ProviderHttp;

  constructor(options: ExpoSenderOptions) {
    this.concurrency = Math.max(1, options.concurrency ?? 6);
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.http = new ProviderHttp(options.guard);
  }

  async close(): Promise<void> {
    await this.http.close();
  }

  async send(messages: OutgoingMessage<PushRendered>[], config: ExpoConfig, mayGo?: MayGo): Promise<SendOutcome[]> {
    const outcomes = new Array<SendOutcome>(messages.length);
    // A malformed token would make Expo refuse the whole request: fail it here, send the rest.
    const sendable: number[] = [];
    messages.forEach((m, i) => {
      if (isExpoPushToken(m.to)) sendable.push(i);
      else outcomes[i] = { status: "failed", reason: `InvalidExpoPushToken: "${clip(m.to, 100)}" is not an Expo push token` };
    });
    const chunks: number[][] = [];
    for (let i = 0; i < sendable.length; i += EXPO_MAX_MESSAGES_PER_REQUEST) {
      chunks.push(sendable.slice(i, i + EXPO_MAX_MESSAGES_PER_REQUEST));
    }
    const url = joinUrl(config.baseUrl ?? EXPO_DEFAULT_BASE_URL, "/--/api/v2/push/send");
    const headers: Record<string, string> = {
      "content-type": "application/json",
      accept: "application/json",
      "accept-encoding": "gzip, deflate",
    };
    if (config.accessToken) headers.authorization = `Bearer ${config.accessToken}`;

    await pMap(
      chunks,
      async (all) => {
        // Asked as the request goes out: a message refused is left out of it.
        const chunk: number[] = [];
        for (const i of all) {
          if (!mayGo || mayGo(messages[i]!)) chunk.push(i);
          else outcomes[i] = NOT_SENT;
        }
        if (chunk.length === 0) return;
        const results = await this.sendChunk(
          chunk.map((i) => messages[i]!),
          url,
          headers,
        );
        for (const [k, messageIndex] of chunk.entries()) outcomes[messageIndex] = results[k]!;
      },
      { concurrency: this.concurrency },
    );
    return outcomes;
  }

  private async sendChunk(chunk: OutgoingMessage<PushRendered>[], url: string, headers: Record<string, string>): Promise<SendOutcome[]> {
    const all = (outcome: SendOutcome) => chunk.map(() => outcome);
    const res = await this.http.request(url, { method: "POST", headers, body: JSON.stringify(chunk.map(toExpoMessage)) }, this.timeoutMs);
    if (!res.ok) return all(noAnswerOutcome("Expo", res));

    const body = (res.json ?? {}) as { data?: unknown; errors?: unknown };
    if (res.status !== 200 || body.errors !== undefined) {
      const reason = `Expo ${describeExpoErrors(body.errors)} (HTTP ${res.status})`;
      return all(isTransientStatus(res.status) ? transient(reason, res.headers) : { status: "failed", reason });
    }
    if (!Array.isArray(body.data) || body.data.length !== chunk.length) {
      const got = Array.isArray(body.data) ? `${body.data.length} tickets` : "no ticket array";
      return all({ status: "retry", reason: `Expo answered ${got} for ${chunk.length} messages` });
    }
    return body.data.map(ticketOutcome);
  }
}

function ticketOutcome(ticket: unknown): SendOutcome {
  const t = (ticket ?? {}) as { status?: unknown; id?: unknown; message?: unknown; details?: { error?: unknown } };
  if (t.status === "ok") return typeof t.id === "string" ? { status: "sent", providerMessageId: t.id } : { status: "sent" };
  const code = typeof t.details?.error === "string" ? clip(t.details.error, 60) : undefined;
  const message = typeof t.message === "string" ? clip(t.message) : "no message";
  if (t.status !== "error") return { status: "retry", reason: "Expo answered a ticket with an unknown status" };
  const reason = code ? `${code}: ${message}` : message;
  return code && TRANSIENT_TICKET_ERRORS.has(code) ? { status: "retry", reason } : { status: "failed", reason };
}

/** "PUSH_TOO_MANY_EXPERIENCE_IDS: …" from Expo's documented {errors: [{code, message}]} (never the raw body). */
function describeExpoErrors(errors: unknown): string {
  if (Array.isArray(errors) && errors.length > 0) {
    return errors
      .slice(0, 3)
      .map((e) => {
        const x = (e ?? {}) as { code?: unknown; message?: unknown };
        return `${typeof x.code === "string" ? `${clip(x.code, 60)}: ` : ""}${typeof x.message === "string" ? clip(x.message) : "no message"}`;
      })
      .join("; ");
  }
  return "no error message in the answer";
}
