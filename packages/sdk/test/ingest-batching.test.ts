// The ingestion client's batching, wire format and local checks, against a recording node:http server.
import { afterEach, describe, expect, it } from "vitest";
import { INGEST_DEFAULTS, Tidings, type TidingsApiError, type TidingsEvent, type TidingsOptions, VERSION } from "../src/index.js";
import { type FakeServer, fakeServer } from "./support/fake-server.js";

let fake: FakeServer | undefined;
const clients: Tidings[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await fake?.close();
  fake = undefined;
});

type Failure = { error: TidingsApiError; events: TidingsEvent[] };

function client(options: Partial<TidingsOptions> = {}) {
  const failures: Failure[] = [];
  const c = new Tidings({
    writeKey: "wk_test",
    host: fake!.url,
    flushIntervalMs: 60_000,
    onError: (error, events) => failures.push({ error, events }),
    ...options,
  });
  clients.push(c);
  return { c, failures };
}

const ids = (json: any): string[] => json.batch.map((e: { messageId: string }) => e.messageId);
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("batching", () => {
  it("sends a batch as soon as it holds maxBatchEvents, and the rest on flush()", async () => {
    fake = await fakeServer();
    const { c } = client({ maxBatchEvents: 10 });
    for (let i = 0; i < 25; i++) c.track({ userId: `u${i}`, event: "Clicked" });
    await fake.waitFor(2);
    await delay(50);
    expect(fake.requests.map((r) => r.json.batch.length)).toEqual([10, 10]);
    await c.flush();
    expect(fake.requests.map((r) => r.json.batch.length)).toEqual([10, 10, 5]);
    const all = fake.requests.flatMap((r) => r.json.batch.map((e: any) => e.userId));
    expect(all).toEqual(Array.from({ length: 25 }, (_, i) => `u${i}`));
    expect(c.stats).toEqual({ queued: 0, inFlight: 0, sent: 25, failed: 0 });
  });

  it("keeps every request body within maxBatchBytes, sending a batch once the next event would not fit", async () => {
    fake = await fakeServer();
    const { c } = client({ maxBatchBytes: 4096, maxEventBytes: 2048 });
    const blob = "x".repeat(1000);
    for (let i = 0; i < 7; i++) c.track({ userId: `u${i}`, event: "Big", properties: { blob } });
    await fake.waitFor(2);
    await delay(50);
    expect(fake.requests.map((r) => r.json.batch.length)).toEqual([3, 3]);
    await c.flush();
    expect(fake.requests.map((r) => r.json.batch.length)).toEqual([3, 3, 1]);
    for (const r of fake.requests) expect(Buffer.byteLength(r.text)).toBeLessThanOrEqual(4096);
    // A fourth event would have fit in neither body.
    expect(Buffer.byteLength(fake.requests[0]!.text) + Buffer.byteLength(JSON.stringify(fake.requests[2]!.json.batch[0]))).toBeGreaterThan(
      4096,
    );
  });

  it("sends a partial batch flushIntervalMs after its first event", async () => {
    fake = await fakeServer();
    const { c } = client({ flushIntervalMs: 300 });
    const started = Date.now();
    c.track({ userId: "a", event: "One" });
    await delay(100);
    c.track({ userId: "b", event: "Two" });
    await fake.waitFor(1);
    const waited = fake.requests[0]!.at - started;
    expect(waited).toBeGreaterThanOrEqual(280);
    expect(waited).toBeLessThan(1500);
    expect(fake.requests[0]!.json.batch).toHaveLength(2);
  });

  it("has documented defaults under the server's limits", () => {
    expect(INGEST_DEFAULTS.maxBatchBytes).toBeLessThan(500 * 1024);
    expect(INGEST_DEFAULTS.maxEventBytes).toBe(32 * 1024);
    expect(INGEST_DEFAULTS.maxBatchEvents).toBeLessThanOrEqual(2500);
  });
});

describe("wire format", () => {
  it("POSTs {batch, context, sentAt} to /v1/batch with Basic auth; each event has its type, a messageId and a timestamp", async () => {
    fake = await fakeServer();
    const { c } = client();
    c.identify({ userId: "u1", traits: { plan: "pro" } });
    c.track({ userId: "u1", event: "Signed Up", properties: { source: "ad" } });
    c.page({ anonymousId: "anon", name: "Home" });
    c.screen({ userId: "u1", name: "Settings" });
    c.group({ userId: "u1", groupId: "acme", traits: { size: 10 } });
    c.alias({ previousId: "anon", userId: "u1" });
    c.track({ userId: "u1", event: "Imported", messageId: "my-id", timestamp: "2024-01-01T00:00:00.000Z" });
    await c.flush();
    expect(fake.requests).toHaveLength(1);
    const r = fake.requests[0]!;
    expect(r.method).toBe("POST");
    expect(r.url).toBe("/v1/batch");
    expect(r.headers.authorization).toBe(`Basic ${Buffer.from("wk_test:").toString("base64")}`);
    expect(r.headers["content-type"]).toBe("application/json");
    expect(Date.parse(r.json.sentAt)).toBeGreaterThan(Date.now() - 10_000);
    expect(r.json.context).toEqual({ library: { name: "@tidings/sdk", version: VERSION } });
    expect(r.json.batch.map((e: any) => e.type)).toEqual(["identify", "track", "page", "screen", "group", "alias", "track"]);
    for (const e of r.json.batch.slice(0, 6)) {
      expect(e.messageId).toMatch(/^[0-9a-f-]{36}$/);
      expect(Date.parse(e.originalTimestamp)).toBeGreaterThan(Date.now() - 10_000);
    }
    expect(new Set(ids(r.json)).size).toBe(7);
    // A given messageId and an explicit timestamp are sent as they are (no originalTimestamp to correct).
    expect(r.json.batch[6]).toEqual({
      type: "track",
      userId: "u1",
      event: "Imported",
      messageId: "my-id",
      timestamp: "2024-01-01T00:00:00.000Z",
    });
  });

  it("keeps a path prefix of the host", async () => {
    fake = await fakeServer();
    const { c } = client({ host: `${fake.url}/tidings/` });
    c.track({ userId: "u", event: "E" });
    await c.flush();
    expect(fake.requests[0]!.url).toBe("/tidings/v1/batch");
  });

  it("gzips bodies of at least gzipMinBytes, and only those", async () => {
    fake = await fakeServer();
    const { c } = client({ gzipMinBytes: 8 * 1024 });
    c.track({ userId: "small", event: "E" });
    await c.flush();
    for (let i = 0; i < 40; i++) c.track({ userId: `u${i}`, event: "E", properties: { text: "lorem ipsum ".repeat(40) } });
    await c.flush();
    const [small, large] = fake.requests;
    expect(small!.headers["content-encoding"]).toBeUndefined();
    expect(large!.headers["content-encoding"]).toBe("gzip");
    expect(large!.json.batch).toHaveLength(40);
    expect(large!.wireBytes).toBeLessThan(Buffer.byteLength(large!.text) / 5);
  });
});

describe("local checks", () => {
  it("refuses an event over maxEventBytes with PAYLOAD_TOO_LARGE and sends the others", async () => {
    fake = await fakeServer();
    const { c, failures } = client();
    c.track({ userId: "u", event: "Ok" });
    c.track({ userId: "u", event: "Huge", properties: { blob: "x".repeat(33 * 1024) } });
    c.track({ userId: "u", event: "Ok too" });
    await c.flush();
    expect(failures).toHaveLength(1);
    expect(failures[0]!.error).toMatchObject({ name: "TidingsApiError", status: 0, code: "PAYLOAD_TOO_LARGE" });
    expect(failures[0]!.events.map((e) => (e as { event?: string }).event)).toEqual(["Huge"]);
    expect(fake.requests[0]!.json.batch.map((e: any) => e.event)).toEqual(["Ok", "Ok too"]);
  });

  it("refuses events the server would refuse for a missing id, naming the field, before they can spoil a batch", async () => {
    fake = await fakeServer();
    const { c, failures } = client();
    c.track({ event: "No one" } as never);
    c.track({ userId: "u" } as never);
    c.group({ userId: "u" } as never);
    c.alias({ previousId: "a" } as never);
    c.track({ userId: "u", event: "Fine" });
    c.track({ userId: "u", event: "Cyclic", properties: { big: BigInt(1) } });
    await c.flush();
    expect(failures.map((f) => [f.error.code, f.error.issues.map((i) => i.path)])).toEqual([
      ["VALIDATION_FAILED", ["userId"]],
      ["VALIDATION_FAILED", ["event"]],
      ["VALIDATION_FAILED", ["groupId"]],
      ["VALIDATION_FAILED", ["userId"]],
      ["VALIDATION_FAILED", ["(event)"]],
    ]);
    expect(fake.requests[0]!.json.batch.map((e: any) => e.event)).toEqual(["Fine"]);
  });

  it("bounds the queue: when maxQueueEvents are waiting, a new event is dropped and reported (QUEUE_FULL)", async () => {
    fake = await fakeServer(() => ({ status: 204, delayMs: 300 }));
    const { c, failures } = client({ maxQueueEvents: 5, maxBatchEvents: 2, maxInFlight: 1 });
    for (let i = 0; i < 8; i++) c.track({ userId: `u${i}`, event: "E" });
    expect(c.stats.queued + c.stats.inFlight).toBe(5);
    expect(failures.map((f) => [f.error.code, (f.events[0] as { userId?: string }).userId])).toEqual([
      ["QUEUE_FULL", "u5"],
      ["QUEUE_FULL", "u6"],
      ["QUEUE_FULL", "u7"],
    ]);
    await c.flush();
    expect(fake.requests.flatMap((r) => r.json.batch.map((e: any) => e.userId))).toEqual(["u0", "u1", "u2", "u3", "u4"]);
    expect(c.stats).toEqual({ queued: 0, inFlight: 0, sent: 5, failed: 3 });
  });
});

describe("close()", () => {
  it("drains the queue and in-flight batches before it resolves, then refuses new events (CLOSED)", async () => {
    fake = await fakeServer(() => ({ status: 204, delayMs: 100 }));
    const { c, failures } = client({ maxBatchEvents: 100, maxInFlight: 2 });
    for (let i = 0; i < 250; i++) c.track({ userId: `u${i}`, event: "E" });
    await c.close();
    expect(fake.requests.map((r) => r.json.batch.length)).toEqual([100, 100, 50]);
    expect(c.stats).toEqual({ queued: 0, inFlight: 0, sent: 250, failed: 0 });
    c.track({ userId: "late", event: "E" });
    expect(failures.map((f) => f.error.code)).toEqual(["CLOSED"]);
    await c.close(); // idempotent
  });

  it("flush() and close() resolve, never reject, and nothing is left unhandled, whatever fails", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      fake = await fakeServer(() => ({ status: 500 }));
      const throwing = new Tidings({
        writeKey: "k",
        host: fake.url,
        maxRetries: 1,
        retryBaseDelayMs: 1,
        onError: () => {
          throw new Error("a buggy onError");
        },
      });
      const broken = new Tidings({
        writeKey: "k",
        host: "http://127.0.0.1:9",
        maxRetries: 0,
        fetch: () => {
          throw new Error("fetch exploded");
        },
        onError: () => {},
      });
      throwing.track({ userId: "u", event: "E" });
      broken.track({ userId: "u", event: "E" });
      await Promise.all([throwing.close(), broken.close()]);
      await delay(50);
      expect(throwing.stats.failed).toBe(1);
      expect(broken.stats.failed).toBe(1);
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });
});
