// Small HTTP helpers shared by the channel senders: one request with a deadline that never throws
// (Twilio, FCM, Expo; Node 20's global fetch, undici inside, pools connections per origin), and
// for those and the webhook the one Retry-After parser and classification of transient statuses.
// Bounded concurrency is p-map's.
import type { TransientFailure } from "./types.ts";

export const DEFAULT_TIMEOUT_MS = 15_000;

/** An HTTP answer, body read in full. */
export interface HttpAnswer {
  ok: true;
  status: number;
  headers: Headers;
  text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: unknown;
}
/** No HTTP answer: connection refused/reset, DNS, TLS, or the deadline passed. */
export interface HttpNoAnswer {
  ok: false;
  reason: string;
}

/**
 * Sends one request and reads the whole answer before `timeoutMs` (connect + headers + body).
 * Resolves with the answer or with why there was none; never rejects.
 */
export async function httpRequest(
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string },
  timeoutMs: number,
): Promise<HttpAnswer | HttpNoAnswer> {
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs), redirect: "manual" });
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { ok: true, status: res.status, headers: res.headers, text, json };
  } catch (err) {
    return { ok: false, reason: describeRequestError(err, timeoutMs) };
  }
}

function describeRequestError(err: unknown, timeoutMs: number): string {
  if (err instanceof Error) {
    if (err.name === "TimeoutError" || err.name === "AbortError") return `no answer within ${timeoutMs} ms`;
    const cause = (err as { cause?: unknown }).cause;
    if (cause instanceof Error) {
      const code = (cause as { code?: unknown }).code;
      return `${err.message}: ${typeof code === "string" ? `${code} ` : ""}${cause.message}`.trim();
    }
    return err.message;
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
export function transient(reason: string, headers?: Headers): TransientFailure {
  const retryAfterMs = headers ? parseRetryAfter(headers.get("retry-after")) : undefined;
  return retryAfterMs === undefined ? { status: "retry", reason } : { status: "retry", reason, retryAfterMs };
}

/** `base` without trailing slashes, followed by `path` (which starts with "/"). */
export function joinUrl(base: string, path: string): string {
  return base.replace(/\/+$/, "") + path;
}

/** Shortens a provider's text for a failure reason. */
export function clip(text: string, max = 300): string {
  const t = text.replace(/\s+/g, " ").trim();
  return t.length > max ? `${t.slice(0, max)}…` : t;
}
