// The HTTP layer both clients share: undici with keep-alive on Node, the global (or a given)
// `fetch` elsewhere; gzip; and the one retry loop (full-jitter backoff, Retry-After).
import { networkError } from "./errors.js";

/** What the clients need from a `fetch`: pass your runtime's (or a wrapped) `fetch` as the `fetch` option. */
export type FetchLike = (
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string | Uint8Array; signal?: AbortSignal },
) => Promise<{ status: number; headers: { get(name: string): string | null }; text(): Promise<string> }>;

export interface HttpRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  timeoutMs: number;
  /** Aborts the request early (the ingestion client's `close()` giving up). */
  signal?: AbortSignal | undefined;
}

/** The request's own timeout, and the caller's signal when there is one. */
const requestSignal = (req: HttpRequest): AbortSignal =>
  req.signal ? AbortSignal.any([AbortSignal.timeout(req.timeoutMs), req.signal]) : AbortSignal.timeout(req.timeoutMs);

export interface HttpResponse {
  status: number;
  header(name: string): string | null;
  body: string;
}

export interface Transport {
  send(req: HttpRequest): Promise<HttpResponse>;
  /** gzip, or undefined where the runtime has no compressor. */
  gzip: ((data: string) => Promise<Uint8Array>) | undefined;
  close(): Promise<void>;
}

function fetchTransport(fetchFn: FetchLike): Transport {
  return {
    async send(req) {
      const res = await fetchFn(req.url, {
        method: req.method,
        headers: req.headers,
        ...(req.body !== undefined ? { body: req.body } : {}),
        signal: requestSignal(req),
      });
      return { status: res.status, header: (name) => res.headers.get(name), body: await res.text() };
    },
    gzip: typeof CompressionStream === "function" ? streamGzip : undefined,
    close: async () => {},
  };
}

async function streamGzip(data: string): Promise<Uint8Array> {
  const stream = new Blob([data]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** undici with a keep-alive pool per client, and zlib's gzip (off the main thread). */
async function undiciTransport(): Promise<Transport | undefined> {
  let undici: typeof import("undici");
  let zlib: typeof import("node:zlib");
  try {
    [undici, zlib] = await Promise.all([import("undici"), import("node:zlib")]);
  } catch {
    return undefined;
  }
  const agent = new undici.Agent({ keepAliveTimeout: 10_000, keepAliveMaxTimeout: 60_000 });
  return {
    async send(req) {
      const res = await undici.request(req.url, {
        method: req.method as "GET",
        headers: req.headers,
        body: req.body ?? null,
        dispatcher: agent,
        signal: requestSignal(req),
      });
      const body = await res.body.text();
      return {
        status: res.statusCode,
        header(name) {
          const v = res.headers[name.toLowerCase()];
          return v === undefined ? null : Array.isArray(v) ? v.join(", ") : v;
        },
        body,
      };
    },
    gzip: (data) =>
      new Promise((resolve, reject) =>
        zlib.gzip(data, (err, out) => (err ? reject(err) : resolve(new Uint8Array(out.buffer, out.byteOffset, out.length)))),
      ),
    close: () => agent.close(),
  };
}

/**
 * The transport, chosen at the first request: the given `fetch`; else undici where it loads
 * (Node); else the global `fetch` (edge runtimes, Deno, Bun, browsers).
 */
export function lazyTransport(fetchFn: FetchLike | undefined): { ready(): Promise<Transport>; close(): Promise<void> } {
  let chosen: Promise<Transport> | undefined;
  return {
    ready() {
      chosen ??= (async () => {
        if (fetchFn) return fetchTransport(fetchFn);
        const node = await undiciTransport();
        if (node) return node;
        if (typeof globalThis.fetch !== "function") {
          throw new Error("No HTTP client: undici did not load and there is no global fetch; pass the `fetch` option");
        }
        return fetchTransport(globalThis.fetch as FetchLike);
      })();
      return chosen;
    },
    async close() {
      if (chosen) await (await chosen.catch(() => undefined))?.close();
    },
  };
}

/** Full-jitter exponential backoff: a random delay in [0, min(cap, base · 2^attempt)). */
export function backoffMs(attempt: number, baseMs: number, capMs: number): number {
  return Math.random() * Math.min(capMs, baseMs * 2 ** attempt);
}

/** Longest Retry-After honoured; a larger value (or a date far ahead) waits this long. */
export const MAX_RETRY_AFTER_MS = 300_000;

/** Retry-After in ms (delta-seconds or an HTTP date), or undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  const v = value.trim();
  const ms = /^\d+(\.\d+)?$/.test(v) ? Number(v) * 1000 : Date.parse(v) - now;
  if (!Number.isFinite(ms)) return undefined;
  return Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS);
}

/** Waits `ms`; with a signal, rejects with its reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (!signal) return new Promise((resolve) => setTimeout(resolve, ms));
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

export interface RetryPolicy {
  /** Attempts after the first. */
  maxRetries: number;
  /** Backoff base: retry n waits a random time in [0, min(retryMaxDelayMs, retryBaseDelayMs · 2ⁿ)). */
  retryBaseDelayMs: number;
  retryMaxDelayMs: number;
  /** Whether an answer with this status may succeed when sent again. */
  retryable(status: number): boolean;
  /** Stops retrying (and the attempt under way): the promise rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
}

/**
 * Sends a request until it gets an answer not worth retrying or the retries are spent, and
 * resolves with the last answer (whatever its status). Rejects with a `NETWORK` TidingsApiError
 * when the last attempt got no answer. Between attempts it waits the answer's Retry-After, else
 * the backoff. `build` makes each attempt's request (a body may change, e.g. `sentAt`).
 */
export async function sendWithRetry(
  transport: Transport,
  build: () => HttpRequest | Promise<HttpRequest>,
  policy: RetryPolicy,
): Promise<HttpResponse> {
  const { signal } = policy;
  for (let attempt = 0; ; attempt++) {
    signal?.throwIfAborted();
    const req = await build();
    let res: HttpResponse | undefined;
    let failure: unknown;
    try {
      res = await transport.send(signal ? { ...req, signal } : req);
    } catch (err) {
      failure = err;
    }
    signal?.throwIfAborted();
    if (res && !policy.retryable(res.status)) return res;
    if (attempt >= policy.maxRetries) {
      if (res) return res;
      throw networkError(failure, req.url);
    }
    const backoff = backoffMs(attempt, policy.retryBaseDelayMs, policy.retryMaxDelayMs);
    await sleep((res && retryAfterMs(res.header("retry-after"))) ?? backoff, signal);
  }
}

/** `Basic base64(key:)` without Buffer (edge runtimes have only btoa). */
export function basicAuth(key: string): string {
  const bytes = new TextEncoder().encode(`${key}:`);
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return `Basic ${btoa(binary)}`;
}

/** UTF-8 length of a string without allocating (TextEncoder would copy every event). */
export function utf8Length(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 2; // a surrogate pair: 4 bytes for 2 code units
      i++;
    } else n += 2;
  }
  return n;
}

/** JSON.parse that answers undefined for a body that is not JSON (a proxy's HTML page). */
export function parseJson(text: string): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
