// The built-in Webhook channel: one HTTP request per message, signed per the Standard Webhooks
// spec (https://www.standardwebhooks.com), over keep-alive undici Agents (one per workspace).
// Every host passes the outbound guard (src/outbound/guard.ts: inside the Agent's DNS lookup, IP
// literals before each request); redirects are followed here, never by undici, each hop checked.
import { createHmac, createSecretKey, type KeyObject } from "node:crypto";
import type { Agent, Dispatcher } from "undici";
import type { WebhookConfig } from "@tidings/schema";
import { isTransientStatus, parseRetryAfter } from "./provider-http.ts";
import { sendEach } from "./send-each.ts";
import type { ChannelSender, MayGo, OutgoingMessage, SendOutcome, WebhookRendered } from "./types.ts";
import { type OutboundGuard, OutboundRefusedError, withoutPrivateAddresses } from "../../outbound/index.ts";

export interface WebhookSenderOptions {
  /** Every URL and redirect goes through it (its allow-list, its DNS cache). */
  guard: OutboundGuard;
  /**
   * Budget of one message, redirects included (default 10 s): each hop's response headers and body
   * gaps get what is left of it, a connection attempt up to all of it, so a message takes at most
   * about 2 × timeoutMs (+ ~1 s: undici enforces header/body timeouts with coarse timers).
   */
  timeoutMs?: number;
  /** Redirects followed per message (each hop re-checked); one more is a permanent failure. Default 3. */
  maxRedirects?: number;
  /** Requests in flight per `send` call. Default 32. */
  concurrency?: number;
  /**
   * Keep-alive connections per origin and workspace (shared by the workspace's `send`s). Default
   * 128: a broadcast's 4 senders × 32. Each workspace has its own: one whose endpoint answers
   * slowly never holds the connections another needs to the same origin.
   */
  connectionsPerOrigin?: number;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_REDIRECTS = 3;
/** Workspaces whose keep-alive connections are kept at once. */
const AGENTS = 256;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** Template headers we never pass on: framing and connection management are the client's, `host` the URL's. */
const DROPPED_HEADERS = new Set([
  "host",
  "content-length",
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  "expect",
]);
/** Headers not carried to another origin by a redirect (as browsers do). */
const CREDENTIAL_HEADERS = ["authorization", "proxy-authorization", "cookie"];
const SIGNATURE_HEADERS = new Set(["webhook-id", "webhook-timestamp", "webhook-signature"]);

// ---------------------------------------------------------------------------------------------
// Signing

/**
 * The HMAC key of a signing secret. `whsec_<base64>` (the Standard Webhooks form) is the base64
 * decoded bytes; any other string is its own UTF-8 bytes (a receiver using the `standardwebhooks`
 * library passes `"whsec_" + base64(secret)`, or the bytes with `{ format: "raw" }`).
 * Throws when a `whsec_` secret is not base64 or is empty.
 */
export function webhookSigningKey(secret: string): Buffer {
  if (secret.startsWith("whsec_")) {
    const b64 = secret.slice("whsec_".length);
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64) || b64.length % 4 !== 0 || b64.length === 0) {
      throw new Error("a signing secret starting with `whsec_` must continue with base64 (the Standard Webhooks form)");
    }
    return Buffer.from(b64, "base64");
  }
  if (secret.length === 0) throw new Error("the signing secret is empty");
  return Buffer.from(secret, "utf8");
}

/** `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, the Standard Webhooks signature. */
export function signWebhook(key: KeyObject | Buffer, id: string, timestampSeconds: number, body: string): string {
  return `v1,${createHmac("sha256", key).update(`${id}.${timestampSeconds}.${body}`).digest("base64")}`;
}

// ---------------------------------------------------------------------------------------------

const failed = (reason: string): SendOutcome => ({ status: "failed", reason });
const retry = (reason: string, retryAfterMs?: number): SendOutcome =>
  retryAfterMs === undefined ? { status: "retry", reason } : { status: "retry", reason, retryAfterMs };

const headerText = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);

/** A URL for a reason: no credentials, no query (either may carry tokens). */
const shown = (url: URL) => `${url.protocol}//${url.host}${url.pathname}`;

/**
 * Sends webhooks. One instance per process: it owns the keep-alive connection pool and the DNS
 * cache; `close()` releases them (in-flight requests finish first).
 */
/** A webhook request as it is sent, and sent again to where a redirect leads. */
interface WebhookRequest {
  url: URL;
  method: string;
  body: string | undefined;
  headers: Record<string, string>;
}

/**
 * The request's headers: the template's, less those Tidings sets; a JSON content type for a body
 * without one; the user agent; Basic credentials from the URL's user info; the webhook id and
 * timestamp (Standard Webhooks; the signature is added per request).
 */
function requestHeaders(rendered: WebhookRendered, url: URL, deliveryId: string, timestamp: number): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(rendered.headers ?? {})) {
    const lower = name.toLowerCase();
    if (!DROPPED_HEADERS.has(lower) && !SIGNATURE_HEADERS.has(lower)) headers[lower] = value;
  }
  const body = rendered.body;
  if (body !== undefined && body !== "" && headers["content-type"] === undefined) headers["content-type"] = "application/json";
  if (headers["user-agent"] === undefined) headers["user-agent"] = "Tidings-Webhooks/1";
  if ((url.username || url.password) && headers.authorization === undefined) {
    const credentials = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
    headers.authorization = `Basic ${Buffer.from(credentials).toString("base64")}`;
  }
  headers["webhook-id"] = deliveryId;
  headers["webhook-timestamp"] = String(timestamp);
  return headers;
}

/** The outcome of a final (not redirecting) answer. */
function answered(status: number, hop: number, retryAfter: string | string[] | undefined): SendOutcome {
  if (status >= 200 && status < 300) return { status: "sent" };
  const what = `webhook answered HTTP ${status}${hop ? ` (after ${hop} redirects)` : ""}`;
  if (isTransientStatus(status)) return retry(what, parseRetryAfter(retryAfter));
  return failed(what);
}

/**
 * The request a redirect leads to, or why it is not followed. A 303, or a 301/302 after a POST,
 * becomes a GET without a body; credentials do not follow to another origin.
 */
function redirected(
  req: WebhookRequest,
  status: number,
  location: string | undefined,
  hop: number,
  max: number,
): WebhookRequest | SendOutcome {
  if (!location) return failed(`webhook answered ${status} without a Location header`);
  if (hop >= max) return failed(`webhook redirected more than ${max} times (last to ${location.slice(0, 200)})`);
  let target: URL;
  try {
    target = new URL(location, req.url);
  } catch {
    return failed(`webhook redirected to an invalid URL ${JSON.stringify(location.slice(0, 200))}`);
  }
  const headers = { ...req.headers };
  let { method, body } = req;
  if (status === 303 || ((status === 301 || status === 302) && method === "POST")) {
    method = "GET";
    body = undefined;
    delete headers["content-type"];
  }
  if (target.origin !== req.url.origin) for (const h of CREDENTIAL_HEADERS) delete headers[h];
  return { url: target, method, body, headers };
}

export class WebhookSender implements ChannelSender<WebhookRendered, WebhookConfig> {
  private readonly guard: OutboundGuard;
  private readonly timeoutMs: number;
  private readonly maxRedirects: number;
  private readonly concurrency: number;
  private readonly keys = new Map<string, KeyObject | Error>();
  private readonly connections: number;
  /** Each workspace's keep-alive connections, the most recently used last (at most AGENTS kept). */
  private readonly agents = new Map<string, Agent>();

  constructor(options: WebhookSenderOptions) {
    this.guard = options.guard;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.maxRedirects = options.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
    this.concurrency = Math.max(1, options.concurrency ?? 32);
    this.connections = options.connectionsPerOrigin ?? 128;
  }

  async send(messages: OutgoingMessage<WebhookRendered>[], config: WebhookConfig, mayGo?: MayGo): Promise<SendOutcome[]> {
    let key: KeyObject | undefined;
    if (config.signingSecret) {
      const k = this.signingKey(config.signingSecret);
      if (k instanceof Error) return messages.map(() => failed(`webhook signing secret: ${k.message}`));
      key = k;
    }
    return sendEach(messages, (m) => this.sendOne(m, key), this.concurrency, mayGo);
  }

  async close(): Promise<void> {
    const agents = [...this.agents.values()];
    this.agents.clear();
    await Promise.all(agents.map((a) => a.close()));
  }

  private agentOf(workspaceId: string): Agent {
    let agent = this.agents.get(workspaceId);
    if (agent) this.agents.delete(workspaceId);
    else {
      agent = this.guard.agent({ connections: this.connections, connectTimeoutMs: this.timeoutMs });
      // The least recently used goes (its requests in flight finish first).
      while (this.agents.size >= AGENTS) {
        const [oldest, old] = this.agents.entries().next().value as [string, Agent];
        this.agents.delete(oldest);
        void old.close();
      }
    }
    this.agents.set(workspaceId, agent);
    return agent;
  }

  private signingKey(secret: string): KeyObject | Error {
    let key = this.keys.get(secret);
    if (!key) {
      try {
        key = createSecretKey(webhookSigningKey(secret));
      } catch (err) {
        key = err as Error;
      }
      if (this.keys.size >= 1000) this.keys.clear();
      this.keys.set(secret, key);
    }
    return key;
  }

  private async sendOne(message: OutgoingMessage<WebhookRendered>, key: KeyObject | undefined): Promise<SendOutcome> {
    let url: URL;
    try {
      url = new URL(message.rendered.url);
    } catch {
      return failed(`invalid webhook URL ${JSON.stringify(message.rendered.url.slice(0, 200))}`);
    }
    const timestamp = Math.floor(Date.now() / 1000);
    let req: WebhookRequest = {
      url,
      method: message.rendered.method,
      body: message.rendered.body,
      headers: requestHeaders(message.rendered, url, message.deliveryId, timestamp),
    };
    const deadline = Date.now() + this.timeoutMs;
    for (let hop = 0; ; hop++) {
      const refused = this.guard.refusal(req.url);
      if (refused) return failed(`webhook target refused: ${hop === 0 ? "" : `redirect to ${shown(req.url)} refused: `}${refused}`);
      if (key) req.headers["webhook-signature"] = signWebhook(key, message.deliveryId, timestamp, req.body ?? "");
      const remaining = deadline - Date.now();
      if (remaining <= 0) return retry(`webhook timed out after ${this.timeoutMs} ms (${hop} redirects)`);
      let res: Dispatcher.ResponseData;
      try {
        res = await this.agentOf(message.workspaceId).request({
          origin: req.url.origin,
          path: req.url.pathname + req.url.search,
          method: req.method as Dispatcher.HttpMethod,
          headers: req.headers,
          body: req.body === undefined || req.body === "" ? null : req.body,
          headersTimeout: remaining,
          bodyTimeout: remaining,
        });
      } catch (err) {
        return this.errorOutcome(err, req.url, hop);
      }
      // The status is the answer; a broken body after it changes nothing.
      await res.body.dump().catch(() => {});
      const status = res.statusCode;
      if (!REDIRECTS.has(status)) return answered(status, hop, res.headers["retry-after"]);
      const next = redirected(req, status, headerText(res.headers.location), hop, this.maxRedirects);
      if ("status" in next) return next;
      req = next;
    }
  }

  private errorOutcome(err: unknown, url: URL, hop: number): SendOutcome {
    const e = err as NodeJS.ErrnoException & { cause?: unknown };
    const refused = e instanceof OutboundRefusedError ? e : e?.cause instanceof OutboundRefusedError ? e.cause : undefined;
    if (refused) return failed(`webhook target refused: ${hop ? `redirect to ${shown(url)} refused: ` : ""}${refused.message}`);
    const where = `${shown(url)}${hop ? ` (after ${hop} redirects)` : ""}`;
    switch (e?.code) {
      case "UND_ERR_CONNECT_TIMEOUT":
      case "UND_ERR_HEADERS_TIMEOUT":
      case "UND_ERR_BODY_TIMEOUT":
        return retry(`webhook timed out after ${this.timeoutMs} ms: ${where}`);
      case "UND_ERR_INVALID_ARG":
      case "UND_ERR_NOT_SUPPORTED":
      case "ERR_INVALID_ARG_TYPE":
      case "ERR_INVALID_ARG_VALUE":
      case "ERR_INVALID_CHAR":
      case "ERR_INVALID_HTTP_TOKEN":
        return failed(`webhook request is invalid: ${e.message}`);
      default:
        return retry(
          withoutPrivateAddresses(`webhook request to ${where} failed: ${e?.code ? `${e.code} ` : ""}${e?.message ?? String(err)}`),
        );
    }
  }
}
