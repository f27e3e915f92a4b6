// Small HTTP helpers shared by the channel senders: one request with a deadline that never throws
// (Twilio, FCM, Expo), through the outbound guard (src/outbound/guard.ts) on a keep-alive undici Agent
// whose sockets resolve through it; and for those and the webhook the one Retry-After parser and
// classification of transient statuses. Bounded concurrency is p-map's.
import type { Dispatcher } from "undici";
import { type OutboundGuard, OutboundRefusedError, withoutPrivateAddresses } from "../../outbound/index.ts";
import type { PermanentFailure, TransientFailure } from "./types.ts";

export const DEFAULT_TIMEOUT_MS = 15_000;
/** An answer's body is read up to this many bytes (the rest is dropped): providers answer in a few kilobytes. */
const MAX_ANSWER_BYTES = 64 * 1024;

export type HttpHeaders = Record<string, string | string[] | undefined>;

/** An HTTP answer, body read (up to MAX_ANSWER_BYTES). */
export interface HttpAnswer {
  ok: true;
  status: number;
  headers: HttpHeaders;
  text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: unknown;
}
/** No HTTP answer: refused by the guard, connection refused/reset, DNS, TLS, or the deadline passed. */
export interface HttpNoAnswer {
  ok: false;
  /** The guard refused the destination: sending again goes to the same place. */
  refused: boolean;
  reason: string;
}

/** The outcome of a request that got no answer: a refused destination fails, anything else is retried. */
export const noAnswerOutcome = (who: string, res: HttpNoAnswer): PermanentFailure | TransientFailure =>
  res.refused ? { status: "failed", reason: `${who}: ${res.reason}` } : { status: "retry", reason: `${who}: ${res.reason}` };

/** A provider's requests: one keep-alive Agent per sender, every destination checked by the guard. */
export class ProviderHttp {
  private readonly agent: Dispatcher;

  constructor(
    private readonly guard: OutboundGuard,
    connections = 64,
  ) {
    this.agent = guard.agent({ connections, connectTimeoutMs: DEFAULT_TIMEOUT_MS });
  }

  /**
   * Sends one request and reads the answer before `timeoutMs` (connect + headers + body).
   * Resolves with the answer or with why there was none; never rejects. Redirects are not followed.
   */
  async request(
    url: string,
    init: { method: string; headers: Record<string, string>; body?: string },
    timeoutMs: number,
  ): Promise<HttpAnswer | HttpNoAnswer> {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return { ok: false, refused: true, reason: "the URL is not valid" };
    }
    const refused = this.guard.refusal(target);
    if (refused) return { ok: false, refused: true, reason: `destination refused: ${refused}` };
    try {
      const res = await this.agent.request({
        origin: target.origin,
        path: target.pathname + target.search,
        method: init.method as Dispatcher.HttpMethod,
        headers: init.headers,
        body: init.body ?? null,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal: AbortSignal.timeout(timeoutMs),
      });
      const text = await readText(res.body);
      let json: unknown;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      return { ok: true, status: res.statusCode, headers: res.headers, text, json };
    } catch (err) {
      if (err instanceof OutboundRefusedError || (err as { cause?: unknown })?.cause instanceof OutboundRefusedError) {
        const e = err instanceof OutboundRefusedError ? err : ((err as { cause: OutboundRefusedError }).cause as OutboundRefusedError);
        return { ok: false, refused: true, reason: `destination refused: ${e.message}` };
      }
      return { ok: false, refused: false, reason: describeRequestError(err, timeoutMs) };
    }
  }

  async close() {
    await this.agent.close();
  }
}

/** The body as text, at most MAX_ANSWER_BYTES of it. */
async function readText(body: Dispatcher.ResponseData["body"]): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const b = chunk as Buffer;
    chunks.push(size + b.length > MAX_ANSWER_BYTES ? b.subarray(0, MAX_ANSWER_BYTES - size) : b);
    size += b.length;
    if (size >= MAX_ANSWER_BYTES) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).toString("utf8");
}

function describeRequestError(err: unknown, timeoutMs: number): string {
  if (err instanceof Error) {
    const code = (err as NodeJS.ErrnoException).code;
    if (
      err.name === "TimeoutError" ||
      err.name === "AbortError" ||
      code === "UND_ERR_HEADERS_TIMEOUT" ||
      code === "UND_ERR_BODY_TIMEOUT" ||
      code === "UND_ERR_CONNECT_TIMEOUT"
    )
      return `no answer within ${timeoutMs} ms`;
    return withoutPrivateAddresses(`${typeof code === "string" ? `${code} ` : ""}${err.message}`.trim());
  }
  return String(err);
}

/**
 * Retry-After (RFC 9110 §10.2.3): delay-seconds or an HTTP-date. Milliseconds from `now`, never
 * negative; undefined when absent or unreadable. Takes a fetch `Headers.get` value (null when
 * absent) or an undici/node header value (the first of repeated ones counts).
 */
export function parseRetryAfter(value: string | readonly string[] | null | undefined, now: number = Date.now()): number | undefined {
  const v = (typeof value === "string" ? value : value?.[0])?.trim();
  if (!v) return undefined;
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/** Statuses worth retrying: request timeout, rate limited, server errors. */
export function isTransientStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** A transient failure carrying the answer's Retry-After, when it has one. */
export function transient(reason: string, headers?: HttpHeaders): TransientFailure {
  const retryAfterMs = headers ? parseRetryAfter(headers["retry-after"]) : undefined;
  return retryAfterMs === undefined ? { status: "retry", reason } : { status: "retry", reason, retryAfterMs };
}

/** `base` without trailing slashes, followed by `path` (which starts with "/"). */
export function joinUrl(base: string, path: string): string {
  return base.replace(/\/+$/, "") + path;
}

/**
 * Shortens a field of a provider's documented error answer (a code, a message) for a failure
 * reason. A reason never carries an answer's raw body: a destination's own text is not echoed.
 */
export function clip(text: string, max = 200): string {
  const t = text.replace(/\s+/g, " ").trim();
  return t.length > max ? `${t.slice(0, max)}…` : t;
}
