// The ingestion client: queues Segment-spec events and sends them to `POST {host}/v1/batch` in
// batches (by count, bytes and time), retries what can succeed later, and reports every event it
// could not deliver to `onError`; or, with `sendBatch`, sends given events at once and answers for
// each. Its methods never throw and never leave a rejected promise.
import { EventType } from "@tidings/schema";
import { hostPort, isTidingsApiError, networkError, TidingsApiError, withFirstIssue, withIssues } from "../errors.js";
import { basicAuth, lazyTransport, type Transport, utf8Length } from "../http.js";
import { VERSION } from "../version.js";
import { type Delivery, deliver, fitting, itemIssues, type RequestLimits, type WireEvent } from "./deliver.js";
import {
  type AliasEvent,
  type BatchEventError,
  type BatchResult,
  type GroupEvent,
  type IdentifyEvent,
  INGEST_DEFAULTS,
  type IngestErrorHandler,
  localIssues,
  missing,
  type PageEvent,
  type ScreenEvent,
  type TidingsEvent,
  type TidingsEventInput,
  type TidingsOptions,
  type TidingsStats,
  type TrackEvent,
} from "./types.js";

interface Queued extends WireEvent {
  seq: number;
  event: TidingsEvent;
}

/** An event completed, checked and serialized (`wire`), or why it cannot be sent (`error`). */
type Prepared = { event: Record<string, unknown> } & (
  | { wire: WireEvent; error?: undefined }
  | { wire?: undefined; error: TidingsApiError }
);

type Resolved = Required<Omit<TidingsOptions, "context" | "onError" | "fetch">>;

const positive = (name: string, v: number, min = 1) => {
  if (!Number.isFinite(v) || v < min) throw new TypeError(`Tidings: ${name} must be a number ≥ ${min}`);
  return v;
};

const warn: IngestErrorHandler = (error, events) => console.warn(`[tidings] ${events.length} event(s) not sent: ${error.message}`);

export class Tidings {
  private readonly o: Resolved;
  private readonly url: string;
  private readonly auth: string;
  private readonly contextJson: string;
  private readonly contextBytes: number;
  /** What one request may carry; `envelopeBytes` counts `{"batch":[`, `]`, context and sentAt. */
  private readonly limits: RequestLimits;
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
  /** `sendBatch` calls under way (close waits for them). */
  private readonly direct = new Set<Promise<unknown>>();
  /** Aborted when `close()` has waited `closeTimeoutMs`: sending and retrying stop. */
  private readonly giveUp = new AbortController();

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
    positive("closeTimeoutMs", o.closeTimeoutMs, 0);
    if (o.gzipMinBytes !== false) positive("gzipMinBytes", o.gzipMinBytes, 0);
    this.o = o;
    this.url = `${options.host.replace(/\/+$/, "")}${o.path}`;
    this.auth = basicAuth(options.writeKey);
    const context = { ...options.context, library: { name: "@tidings/sdk", version: VERSION } };
    this.contextJson = `,"context":${JSON.stringify(context)}`;
    this.contextBytes = utf8Length(this.contextJson);
    const envelopeBytes = utf8Length(`{"batch":[]${this.contextJson},"sentAt":"${new Date(0).toISOString()}"}`);
    positive("maxEventBytes", o.maxEventBytes);
    positive("maxBatchBytes", o.maxBatchBytes, envelopeBytes + o.maxEventBytes);
    this.limits = { envelopeBytes, maxBatchEvents: o.maxBatchEvents, maxBatchBytes: o.maxBatchBytes };
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

  /**
   * Sends `events` now, apart from the queue, in as few requests as `maxBatchEvents` and
   * `maxBatchBytes` allow (one after the other), and resolves with what became of each: the
   * count accepted, the events rejected and those undelivered. Objects are completed and checked
   * as the queued events are; a string is an event's JSON text, sent as it is (no local checks:
   * give it a `messageId` so a retry or a second run stores it once). Never rejects; does not
   * report to `onError` nor count in `stats`.
   */
  sendBatch(events: readonly (TidingsEventInput | string)[]): Promise<BatchResult> {
    const run = this.sendNow(events);
    this.direct.add(run);
    return run.finally(() => this.direct.delete(run));
  }

  /** Refuses new events (CLOSED), sends everything queued, waits for it and for `sendBatch` calls, then releases connections. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      const drained = Promise.allSettled([this.flush(), ...this.direct]);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<"late">((resolve) => {
        timer = setTimeout(() => resolve("late"), this.o.closeTimeoutMs);
      });
      if ((await Promise.race([drained, late])) === "late") {
        const where = hostPort(this.url) ?? this.url;
        this.giveUp.abort(
          new TidingsApiError(
            0,
            "NETWORK",
            `Not delivered: close() gave up after ${this.o.closeTimeoutMs} ms sending to ${where}`,
            undefined,
          ),
        );
        // The aborted requests and retries settle at once; their events reach onError.
        await drained;
      }
      clearTimeout(timer);
      this.clearTimer();
      await this.transport.close().catch(() => {});
    })();
    return this.closing;
  }

  private enqueue(type: EventType, input: object): void {
    const { event, wire, error } = this.prepare(type, input, () => this.refusal());
    if (error) {
      this.failed += 1;
      this.report(error, [event as TidingsEvent]);
      return;
    }
    this.queue.push({ ...wire, seq: ++this.seq, event: event as TidingsEvent });
    this.queuedBytes += wire.bytes;
    this.pump();
  }

  /** Why the queue takes no more events, if it does not. */
  private refusal(): TidingsApiError | undefined {
    if (this.closed) return closedError();
    if (this.pending() >= this.o.maxQueueEvents) {
      return new TidingsApiError(0, "QUEUE_FULL", `${this.o.maxQueueEvents} events are already waiting`, undefined);
    }
    return undefined;
  }

  /** Completes the event (type, messageId, originalTimestamp), checks it and serializes it, unless `refuse` answers first. */
  private prepare(type: EventType, input: object, refuse?: () => TidingsApiError | undefined): Prepared {
    const event: Record<string, unknown> = { type };
    try {
      Object.assign(event, input, { type });
      const refused = refuse?.();
      if (refused) return { event, error: refused };
      event.messageId ??= crypto.randomUUID();
      // The server corrects originalTimestamp for clock skew with sentAt; an explicit timestamp is used as is.
      if (missing(event.timestamp) && missing(event.originalTimestamp)) event.originalTimestamp = new Date().toISOString();
      const issues = localIssues(type, event);
      if (issues.length)
        return {
          event,
          error: new TidingsApiError(0, "VALIDATION_FAILED", withFirstIssue(`Invalid ${type} event`, issues), undefined, issues),
        };
      const json = JSON.stringify(event);
      const bytes = utf8Length(json);
      // The server measures the event with the batch's context merged in.
      if (bytes + this.contextBytes > this.o.maxEventBytes) {
        const message = `event is larger than ${this.o.maxEventBytes} bytes`;
        return { event, error: new TidingsApiError(0, "PAYLOAD_TOO_LARGE", `An ${message}`, undefined, [{ path: "(event)", message }]) };
      }
      return { event, wire: { json, bytes } };
    } catch (err) {
      // JSON.stringify of a BigInt or a cycle, a getter that throws: the event is not sendable.
      const message = `The ${type} event is not serializable: ${err instanceof Error ? err.message : String(err)}`;
      return {
        event,
        error: new TidingsApiError(0, "VALIDATION_FAILED", message, undefined, [{ path: "(event)", message }], { cause: err }),
      };
    }
  }

  private async sendNow(events: readonly (TidingsEventInput | string)[]): Promise<BatchResult> {
    const result: BatchResult = { accepted: 0, rejected: [], undelivered: [] };
    if (this.closed) {
      const error = closedError();
      result.undelivered = events.map((_, index) => ({ index, error }));
      return result;
    }
    const wire: WireEvent[] = [];
    /** The index in `events` of each event in `wire`. */
    const origin: number[] = [];
    for (const [index, input] of events.entries()) {
      if (typeof input === "string") {
        wire.push({ json: input, bytes: utf8Length(input) });
        origin.push(index);
      } else {
        const type = EventType.safeParse((input as { type?: unknown } | null)?.type);
        const prepared: Prepared = type.success
          ? this.prepare(type.data, input)
          : { event: {}, error: new TidingsApiError(0, "VALIDATION_FAILED", "Invalid event", undefined, [TYPE_ISSUE]) };
        if (prepared.error) result.rejected.push({ index, error: prepared.error });
        else {
          wire.push(prepared.wire);
          origin.push(index);
        }
      }
    }
    if (wire.length > 0) {
      const delivery = await this.transmit(wire);
      result.accepted = delivery.accepted;
      for (const failure of delivery.failures) {
        const list = failure.rejected ? result.rejected : result.undelivered;
        failure.indexes.forEach((i, k) => {
          list.push({ index: origin[i]!, error: failure.rejected ? eventError(failure.error, k) : failure.error });
        });
      }
    }
    result.rejected.sort(byIndex);
    result.undelivered.sort(byIndex);
    return result;
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
    return n >= this.o.maxBatchEvents || this.limits.envelopeBytes + this.queuedBytes + n - 1 > this.o.maxBatchBytes;
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
    const n = fitting(this.queue, 0, this.limits);
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

  /** Sends one batch of the queue until each event is acknowledged or reported to onError. Never rejects. */
  private async send(batch: Queued[]): Promise<void> {
    const { accepted, failures } = await this.transmit(batch);
    this.sent += accepted;
    for (const f of failures) {
      this.fail(
        f.error,
        f.indexes.map((i) => batch[i]!),
      );
    }
  }

  /** Sends events in as many requests as the limits ask; what was acknowledged and what failed. Never rejects. */
  private async transmit(events: readonly WireEvent[]): Promise<Delivery> {
    try {
      const transport = await this.transport.ready();
      return await deliver(transport, (batch) => this.request(batch, transport), events, {
        ...this.o,
        ...this.limits,
        signal: this.giveUp.signal,
      });
    } catch (err) {
      const error = isTidingsApiError(err) ? err : networkError(err);
      return { accepted: 0, failures: [{ error, indexes: events.map((_, i) => i), rejected: false }] };
    }
  }

  /** The request for a batch; `sentAt` is new on every attempt (the server corrects clock skew with it). */
  private async request(items: WireEvent[], transport: Transport) {
    const sentAt = new Date().toISOString();
    const json = `{"batch":[${items.map((i) => i.json).join(",")}]${this.contextJson},"sentAt":"${sentAt}"}`;
    const headers: Record<string, string> = { authorization: this.auth, "content-type": "application/json" };
    let body: string | Uint8Array = json;
    let bytes = this.limits.envelopeBytes + items.length - 1;
    for (const i of items) bytes += i.bytes;
    if (this.o.gzipMinBytes !== false && bytes >= this.o.gzipMinBytes && transport.gzip) {
      body = await transport.gzip(json);
      headers["content-encoding"] = "gzip";
    }
    return { method: "POST", url: this.url, headers, body, timeoutMs: this.o.timeoutMs };
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

const closedError = () => new TidingsApiError(0, "CLOSED", "The client is closed", undefined);

const TYPE_ISSUE = { path: "type", message: `expected one of ${EventType.options.join(", ")}` };

const byIndex = (a: BatchEventError, b: BatchEventError) => a.index - b.index;

/** The error as one event of the refused request sees it: the issues naming it (`batch.k…`), relative to it. */
function eventError(error: TidingsApiError, k: number): TidingsApiError {
  return withIssues(error, itemIssues(error, k));
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
