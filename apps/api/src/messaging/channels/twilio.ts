// SMS through Twilio's Programmable Messaging REST API:
//   POST {baseUrl}/2010-04-01/Accounts/{AccountSid}/Messages.json
//   Authorization: Basic base64(AccountSid:AuthToken)
//   Content-Type: application/x-www-form-urlencoded   To, Body, and MessagingServiceSid or From
// A created message answers 201 with the Message resource; its `sid` (SM…) is the provider id.
// Errors answer a JSON body {code, message, more_info, status}.
import type { TwilioConfig } from "@tidings/schema";
import type { OutboundGuard } from "../../outbound/index.ts";
import { clip, DEFAULT_TIMEOUT_MS, isTransientStatus, joinUrl, noAnswerOutcome, ProviderHttp, transient } from "./provider-http.ts";
import { sendEach } from "./send-each.ts";
import type { ChannelSender, MayGo, OutgoingMessage, SendOutcome, SmsRendered } from "./types.ts";

export const TWILIO_DEFAULT_BASE_URL = "https://api.twilio.com";

export interface TwilioSenderOptions {
  /** Every destination (the base URL) goes through it. */
  guard: OutboundGuard;
  /** Requests in flight at once per `send` call (default 8). */
  concurrency?: number;
  /** Deadline of one request, answer body included (default 15 s). */
  timeoutMs?: number;
}

export class TwilioSender implements ChannelSender<SmsRendered, TwilioConfig> {
  private readonly concurrency: number;
  private readonly timeoutMs: number;
  private readonly http: ProviderHttp;

  constructor(options: TwilioSenderOptions) {
    this.concurrency = Math.max(1, options.concurrency ?? 8);
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.http = new ProviderHttp(options.guard);
  }

  async close(): Promise<void> {
    await this.http.close();
  }

  async send(messages: OutgoingMessage<SmsRendered>[], config: TwilioConfig, mayGo?: MayGo): Promise<SendOutcome[]> {
    if (!config.messagingServiceSid && !config.fromNumber) {
      const failed: SendOutcome = { status: "failed", reason: "Twilio provider has neither messagingServiceSid nor fromNumber" };
      return messages.map(() => failed);
    }
    const url = joinUrl(
      config.baseUrl ?? TWILIO_DEFAULT_BASE_URL,
      `/2010-04-01/Accounts/${encodeURIComponent(config.accountSid)}/Messages.json`,
    );
    const authorization = `Basic ${Buffer.from(`${config.accountSid}:${config.authToken}`, "utf8").toString("base64")}`;
    return sendEach(messages, (m) => this.sendOne(m, config, url, authorization), this.concurrency, mayGo);
  }

  private async sendOne(m: OutgoingMessage<SmsRendered>, config: TwilioConfig, url: string, authorization: string): Promise<SendOutcome> {
    const form = new URLSearchParams();
    form.set("To", m.to);
    form.set("Body", m.rendered.body);
    // With both, Twilio sends through the service; give only one so the choice is explicit.
    if (config.messagingServiceSid) form.set("MessagingServiceSid", config.messagingServiceSid);
    else form.set("From", config.fromNumber!);

    const res = await this.http.request(
      url,
      {
        method: "POST",
        headers: {
          authorization,
          "content-type": "application/x-www-form-urlencoded",
          accept: "application/json",
        },
        body: form.toString(),
      },
      this.timeoutMs,
    );
    if (!res.ok) return noAnswerOutcome("Twilio", res);

    if (res.status >= 200 && res.status < 300) {
      const sid = (res.json as { sid?: unknown } | undefined)?.sid;
      return typeof sid === "string" ? { status: "sent", providerMessageId: sid } : { status: "sent" };
    }
    const reason = `Twilio ${describeTwilioError(res.status, res.json)}`;
    return isTransientStatus(res.status) ? transient(reason, res.headers) : { status: "failed", reason };
  }
}

/** "error 21211: Invalid 'To' Phone Number (HTTP 400)" from Twilio's documented error body (never the raw body). */
function describeTwilioError(status: number, json: unknown): string {
  const body = (json ?? {}) as { code?: unknown; message?: unknown };
  const code = typeof body.code === "number" || typeof body.code === "string" ? ` ${clip(String(body.code), 20)}` : "";
  const message = typeof body.message === "string" ? clip(body.message) : "no error message in the answer";
  return `error${code}: ${message} (HTTP ${status})`;
}
