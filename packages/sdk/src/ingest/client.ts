// The ingestion client: queues Segment-spec events and sends them to `POST {host}/v1/batch` in
// batches (by count, bytes and time), retries what can succeed later, and reports every event it
// could not deliver to `onError` — its methods never throw and never leave a rejected promise.
import type { ErrorIssue, EventType } from "@tidings/schema";
import { networkError, TidingsApiError } from "../errors.js";
import {
  backoffMs,
  basicAuth,
  type HttpResponse,
  lazyTransport,
  parseJson,
  retryAfterMs,
  sleep,
  type Transport,
  utf8Length,
} from "../http.js";
import { VERSION } from "../version.js";
import {
  type AliasEvent,
  type GroupEvent,
  type IdentifyEvent,
  INGEST_DEFAULTS,
  type IngestErrorHandler,
  localIssues,
  missing,
  type PageEvent,
  type ScreenEvent,
  type TidingsEvent,
  type TidingsOptions,
  type TidingsStats,
  type TrackEvent,
} from "./types.js";

interface Queued {
  seq: number;
  json: string;
  bytes: number;
  event: TidingsEvent;
}

type Resolved = Required<Omit<TidingsOptions, "context" | "onError" | "fetch">>;

const positive = (name: string, v: number, min = 1) => {
  if (!Number.isFinite(v) || v < min) throw new TypeError(`Tidings: ${name} must be a number ≥ ${min}`);
  return v;
};

/** 408, 429 and 5xx may succeed later; 501 and 505 never will. */
const retryable = (status: number) => status === 408 || status === 429 || (status >= 500 && status !== 501 && status !== 505);

const warn: IngestErrorHandler = (error, events) => console.warn(`[tidings] ${events.length} event(s) not sent: ${error.message}`);

export class Tidings {
  private readonly o: Resolved;
  private readonly url: string;
  private readonly auth: string;
  private readonly contextJson: string;
  private readonly contextBytes: number;
  /** Bytes of a body around its events: `{"batch":[`, `]`, context and sentAt. */
  private readonly envelopeBytes: number;
  private readonly onError: IngestErrorHandler;
  private readonly transport: ReturnType<typeof lazyTransport>;

  private readonly queue: Queued[] = [];
  private queuedBytes = 0;
  private seq = 0;
  /** Queued events up to this seq are sent without waiting for a full batch (flush, close). */
  private flushUpTo = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** The interval elapsed since the oldest queued event: partial batches may go. */
  private timerDue = false;
  /** The lowest seq of each batch in flight (or waiting for a retry). */
  private readonly inFlight = new Set<{ minSeq: number; count: number }>();
  private inFlightEvents = 0;
  private sent = 0;
  private failed = 0;
  private closed = false;
  private closing: Promise<void> | undefined;
  private waiters: (() => void)[] = [];

  constructor(options: TidingsOptions) {
    if (!options || typeof options.writeKey !== "string" || options.writeKey === "") throw new TypeError("Tidings: writeKey is required");
    if (typeof options.host !== "string" || !/^https?:\/\//.test(options.host)) throw new TypeError("Tidings: host must be an http(s) URL");
    const o = { ...INGEST_DEFAULTS, ...stripUndefined(options) } as Resolved & TidingsOptions;
    positive("maxBatchEvents", o.maxBatchEvents);
    positive("maxQueueEvents", o.maxQueueEvents);
    positive("maxInFlight", o.maxInFlight);
    positive("maxRetries", o.maxRetries, 0);
    positive("flushIntervalMs", o.flushIntervalMs, 0);
    positive("timeoutMs", o.timeoutMs);
    if (o.gzipMinBytes !== false) positive("gzipMinBytes", o.gzipMinBytes, 0);
    this.o = o;
    this.url = `${options.host.replace(/\/+$/, "")}${o.path}`;
    this.auth = basicAuth(options.writeKey);
    const context = { ...options.context, library: { name: "@tidings/sdk", version: VERSION } };
    this.contextJson = `,"context":${JSON.stringify(context)}`;
    this.contextBytes = utf8Length(this.contextJson);
    this.envelopeBytes = utf8Length(`{"batch":[]${this.contextJson},"sentAt":"${new Date(0).toISOString()}"}`);
    positive("maxEventBytes", o.maxEventBytes);
    positive("maxBatchBytes", o.maxBatchBytes, this.envelopeBytes + o.maxEventBytes);
    this.onError = options.onError ?? warn;
    this.transport = lazyTransport(options.fetch);
  }

  identify(event: IdentifyEvent): void {
    this.enqueue("identify", event);
  }
  track(event: TrackEvent): void {
    this.enqueue("track", event);
  }
  page(event: PageEvent): void {
    this.enqueue("page", event);
  }
  screen(event: ScreenEvent): void {
    this.enqueue("screen", event);
  }
  group(event: GroupEvent): void {
    this.enqueue("group", event);
  }
  alias(event: AliasEvent): void {
    this.enqueue("alias", event);
  }

  get stats(): TidingsStats {
    return { queued: this.queue.length, inFlight: this.inFlightEvents, sent: this.sent, failed: this.failed };
  }

  /**
   * Sends every event queued so far without waiting for a full batch, and resolves once each is
   * acknowledged or reported to onError. Never rejects.
   */
  async flush(): Promise<void> {
    const upTo = this.seq;
    if (upTo > this.flushUpTo) this.flushUpTo = upTo;
    this.pump();
    while (this.unsettled(upTo)) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  /** Refuses new events (CLOSED), sends everything queued, waits for it, then releases connections. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      await this.flush();
      this.clearTimer();
      await this.transport.close().catch(() => {});
    })();
    return this.closing;
  }

  private enqueue(type: EventType, input: object): void {
    const event: Record<string, unknown> = { type };
    let refused: TidingsApiError | undefined;
    try {
      Object.assign(event, input, { type });
      refused = this.admit(type, event);
    } catch (err) {
      // JSON.stringify of a BigInt or a cycle, a getter that throws: the event is not sendable.
      const message = `The ${type} event is not serializable: ${err instanceof Error ? err.message : String(err)}`;
      refused = new TidingsApiError(0, "VALIDATION_FAILED", message, undefined, [{ path: "(event)", message }], { cause: err });
    }
    if (refused) {
      this.failed += 1;
      this.report(refused, [event as TidingsEvent]);
    }
  }

  /** Queues the event, or answers why it is refused. */
  private admit(type: EventType, event: Record<string, unknown>): TidingsApiError | undefined {
    if (this.closed) return new TidingsApiError(0, "CLOSED", "The client is closed", undefined);
    if (this.pending() >= this.o.maxQueueEvents) {
      return new TidingsApiError(0, "QUEUE_FULL", `${this.o.maxQueueEvents} events are already waiting`, undefined);
    }
    event.messageId ??= crypto.randomUUID();
    // The server corrects originalTimestamp for clock skew with sentAt; an explicit timestamp is used as is.
    if (missing(event.timestamp) && missing(event.originalTimestamp)) event.originalTimestamp = new Date().toISOString();
    const issues = localIssues(type, event);
    if (issues.length) return new TidingsApiError(0, "VALIDATION_FAILED", `Invalid ${type} event`, undefined, issues);
    const json = JSON.stringify(event);
    const bytes = utf8Length(json);
    // The server measures the event with the batch's context merged in.
    if (bytes + this.contextBytes > this.o.maxEventBytes) {
      const message = `event is larger than ${this.o.maxEventBytes} bytes`;
      return new TidingsApiError(0, "PAYLOAD_TOO_LARGE", `An ${message}`, undefined, [{ path: "(event)", message }]);
    }
    this.queue.push({ seq: ++this.seq, json, bytes, event: event as TidingsEvent });
    this.queuedBytes += bytes;
    this.pump();
    return undefined;
  }

  private pending(): number {
    return this.queue.length + this.inFlightEvents;
  }

  private unsettled(upTo: number): boolean {
    if (this.queue.length > 0 && this.queue[0]!.seq <= upTo) return true;
    for (const b of this.inFlight) if (b.minSeq <= upTo) return true;
    return false;
  }

  /** Whether the queue's head holds a full batch (by count, or the next event would not fit). */
  private headFull(): boolean {
    const n = this.queue.length;
    return n >= this.o.maxBatchEvents || this.envelopeBytes + this.queuedBytes + n - 1 > this.o.maxBatchBytes;
  }

  /** Starts sends while there is room in flight and a batch is ready; keeps the interval timer. */
  private pump(): void {
    while (this.queue.length > 0 && this.inFlight.size < this.o.maxInFlight) {
      const due = this.timerDue || this.closed || this.queue[0]!.seq <= this.flushUpTo;
      if (!due && !this.headFull()) break;
      this.startBatch(this.cut());
    }
    if (this.queue.length === 0) {
      this.timerDue = false;
      this.clearTimer();
    } else if (this.timer === undefined && !this.timerDue) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.timerDue = true;
        this.pump();
      }, this.o.flushIntervalMs);
    }
  }

  /** Takes the longest head of the queue that fits one request. */
  private cut(): Queued[] {
    let n = 0;
    let bytes = this.envelopeBytes;
    while (n < this.queue.length && n < this.o.maxBatchEvents) {
      const next = bytes + this.queue[n]!.bytes + (n > 0 ? 1 : 0);
      if (next > this.o.maxBatchBytes) break;
      bytes = next;
      n++;
    }
    const items = this.queue.splice(0, n);
    for (const item of items) this.queuedBytes -= item.bytes;
    return items;
  }

  private startBatch(items: Queued[]): void {
    const record = { minSeq: items[0]!.seq, count: items.length };
    this.inFlight.add(record);
    this.inFlightEvents += items.length;
    void this.send(items).then(() => {
      this.inFlight.delete(record);
      this.inFlightEvents -= record.count;
      this.pump();
      const waiters = this.waiters;
      this.waiters = [];
      for (const w of waiters) w();
    });
  }

  /** Sends one batch until it is acknowledged or has failed for good. Never rejects. */
  private async send(batch: Queued[]): Promise<void> {
    let items = batch;
    let attempt = 0;
    let salvaged = false;
    try {
      const transport = await this.transport.ready();
      for (;;) {
        let res: HttpResponse | undefined;
        let error: TidingsApiError;
        try {
          res = await transport.send(await this.request(items, transport));
          if (res.status >= 200 && res.status < 300) {
            this.sent += items.length;
            return;
          }
          error = TidingsApiError.fromResponse(res.status, parseJson(res.body), res.header("x-request-id"));
        } catch (err) {
          error = networkError(err);
        }
        if (res && !retryable(res.status)) {
          const rest = salvaged ? undefined : this.salvage(items, error);
          if (!rest) return this.fail(error, items);
          items = rest;
          salvaged = true;
          continue;
        }
        if (attempt >= this.o.maxRetries) return this.fail(error, items);
        const wait =
          (res && retryAfterMs(res.header("retry-after"))) ?? backoffMs(attempt, this.o.retryBaseDelayMs, this.o.retryMaxDelayMs);
        attempt++;
        await sleep(wait);
      }
    } catch (err) {
      this.fail(err instanceof TidingsApiError ? err : networkError(err), items);
    }
  }

  /** The request for a batch; `sentAt` is new on every attempt (the server corrects clock skew with it). */
  private async request(items: Queued[], transport: Transport) {
    const sentAt = new Date().toISOString();
    const json = `{"batch":[${items.map((i) => i.json).join(",")}]${this.contextJson},"sentAt":"${sentAt}"}`;
    const headers: Record<string, string> = { authorization: this.auth, "content-type": "application/json" };
    let body: string | Uint8Array = json;
    let bytes = this.envelopeBytes + items.length - 1;
    for (const i of items) bytes += i.bytes;
    if (this.o.gzipMinBytes !== false && bytes >= this.o.gzipMinBytes && transport.gzip) {
      body = await transport.gzip(json);
      headers["content-encoding"] = "gzip";
    }
    return { method: "POST", url: this.url, headers, body, timeoutMs: this.o.timeoutMs };
  }

  /**
   * A 400 or 413 whose issues each name an item (`batch.3.event`): those items are reported, the
   * rest are sent again (once), so one bad event does not lose its whole batch.
   */
  private salvage(items: Queued[], error: TidingsApiError): Queued[] | undefined {
    if ((error.status !== 400 && error.status !== 413) || error.issues.length === 0) return undefined;
    const bad = new Map<number, ErrorIssue[]>();
    for (const issue of error.issues) {
      const m = /^batch\.(\d+)(\..*)?$/.exec(issue.path);
      const i = m ? Number(m[1]) : Number.NaN;
      if (!(i < items.length)) return undefined;
      bad.set(i, [...(bad.get(i) ?? []), { path: issue.path, message: issue.message }]);
    }
    if (bad.size === items.length) return undefined;
    const badIndexes = [...bad.keys()].sort((a, b) => a - b);
    // Issue paths are renumbered so that `batch.k` names the k-th event reported.
    const issues = badIndexes.flatMap((i, k) =>
      bad.get(i)!.map((issue) => ({ ...issue, path: issue.path.replace(/^batch\.\d+/, `batch.${k}`) })),
    );
    const reported = new TidingsApiError(error.status, error.code, error.message, error.requestId, issues);
    this.fail(
      reported,
      badIndexes.map((i) => items[i]!),
    );
    return items.filter((_, i) => !bad.has(i));
  }

  private fail(error: TidingsApiError, items: Queued[]): void {
    this.failed += items.length;
    this.report(
      error,
      items.map((i) => i.event),
    );
  }

  private report(error: TidingsApiError, events: TidingsEvent[]): void {
    try {
      this.onError(error, events);
    } catch {
      // A throwing onError must not break the queue (nor surface as an unhandled rejection).
    }
  }

  private clearTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
