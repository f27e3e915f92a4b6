// Retries of the ingestion client against a node:http server that fails on purpose: what is
// retried (network errors, 408, 429, 5xx), how long it waits (backoff, Retry-After), what is not
// (other 4xx), and that a retried batch carries the same events with the same messageIds.
import { afterEach, describe, expect, it } from "vitest";
import { Tidings, type TidingsApiError, type TidingsEvent, type TidingsOptions } from "../src/index.js";
import { envelope, type FakeServer, fakeServer, type Reply } from "./support/fake-server.js";

let fake: FakeServer | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

type Failure = { error: TidingsApiError; events: TidingsEvent[] };

async function sendThrough(replies: Reply[], options: Partial<TidingsOptions> = {}, events = 3) {
  let n = 0;
  fake = await fakeServer(() => replies[Math.min(n++, replies.length - 1)]!);
  const failures: Failure[] = [];
  const c = new Tidings({
    writeKey: "k",
    host: fake.url,
    retryBaseDelayMs: 20,
    retryMaxDelayMs: 100,
    onError: (error, evs) => failures.push({ error, events: evs }),
    ...options,
  });
  for (let i = 0; i < events; i++) c.track({ userId: `u${i}`, event: "E" });
  await c.close();
  return { requests: fake.requests, failures, stats: c.stats };
}

const messageIds = (r: { json: any }) => r.json.batch.map((e: { messageId: string }) => e.messageId);

describe("retries", () => {
  it("retries a 500 with backoff, sending the same events with the same messageIds", async () => {
    const { requests, failures, stats } = await sendThrough([
      { status: 500, body: envelope("INTERNAL", "boom") },
      { status: 500 },
      { status: 204 },
    ]);
    expect(requests).toHaveLength(3);
    expect(messageIds(requests[1]!)).toEqual(messageIds(requests[0]!));
    expect(messageIds(requests[2]!)).toEqual(messageIds(requests[0]!));
    expect(new Set(messageIds(requests[0]!)).size).toBe(3);
    expect(requests[2]!.json.batch).toEqual(requests[0]!.json.batch);
    expect(failures).toEqual([]);
    expect(stats.sent).toBe(3);
  });

  it("honours Retry-After on a 429", async () => {
    const { requests, failures } = await sendThrough([
      { status: 429, headers: { "retry-after": "1" }, body: envelope("RATE_LIMITED", "slow down") },
      { status: 204 },
    ]);
    expect(requests).toHaveLength(2);
    // Backoff alone would have waited at most 100 ms here.
    expect(requests[1]!.at - requests[0]!.at).toBeGreaterThanOrEqual(950);
    expect(messageIds(requests[1]!)).toEqual(messageIds(requests[0]!));
    expect(failures).toEqual([]);
  });

  it("retries 408, 502, 503 and a dropped connection", async () => {
    const { requests, failures, stats } = await sendThrough([
      { status: 408 },
      { status: 502 },
      { status: 503 },
      { status: 0, destroy: true },
      { status: 204 },
    ]);
    expect(requests).toHaveLength(5);
    for (const r of requests) expect(messageIds(r)).toEqual(messageIds(requests[0]!));
    expect(failures).toEqual([]);
    expect(stats.sent).toBe(3);
  });

  it("gives up after maxRetries and reports the last error with the batch's events", async () => {
    const { requests, failures } = await sendThrough([{ status: 503, body: envelope("UNAVAILABLE", "overloaded") }], { maxRetries: 2 });
    expect(requests).toHaveLength(3);
    expect(failures).toHaveLength(1);
    expect(failures[0]!.error).toMatchObject({ status: 503, code: "UNAVAILABLE", message: "overloaded", requestId: "req-fake" });
    expect(failures[0]!.events.map((e) => e.messageId)).toEqual(messageIds(requests[0]!));
  });

  it("reports a network failure as NETWORK once the retries are spent", async () => {
    const failures: Failure[] = [];
    const c = new Tidings({
      writeKey: "k",
      host: "http://127.0.0.1:9",
      maxRetries: 1,
      retryBaseDelayMs: 1,
      onError: (error, events) => failures.push({ error, events }),
    });
    c.track({ userId: "u", event: "E" });
    await c.close();
    expect(failures).toHaveLength(1);
    expect(failures[0]!.error).toMatchObject({ name: "TidingsApiError", status: 0, code: "NETWORK" });
    expect(failures[0]!.error.message).toMatch(/ECONNREFUSED/);
  });
});

describe("no retry on other 4xx", () => {
  it("reports a 400 at once, with the server's issues and the batch's events", async () => {
    const issues = [
      { path: "batch.0.event", message: "required" },
      { path: "batch.1.event", message: "required" },
    ];
    const { requests, failures } = await sendThrough(
      [{ status: 400, body: envelope("VALIDATION_FAILED", "Invalid batch", issues) }],
      {},
      2,
    );
    expect(requests).toHaveLength(1);
    expect(failures).toHaveLength(1);
    expect(failures[0]!.error).toMatchObject({
      status: 400,
      code: "VALIDATION_FAILED",
      message: "Invalid batch: batch.0.event: required (and 1 more in err.issues)",
      requestId: "req-fake",
      issues,
    });
    expect(failures[0]!.events.map((e) => e.messageId)).toEqual(messageIds(requests[0]!));
  });

  it("reports 401 and 403 at once", async () => {
    for (const status of [401, 403]) {
      const { requests, failures } = await sendThrough([{ status, body: envelope(status === 401 ? "UNAUTHORIZED" : "FORBIDDEN", "no") }]);
      expect(requests).toHaveLength(1);
      expect(failures[0]!.error.status).toBe(status);
      await fake?.close();
    }
  });

  it("when the issues name only some items, reports those and sends the others once more", async () => {
    const { requests, failures, stats } = await sendThrough(
      [
        {
          status: 400,
          body: envelope("VALIDATION_FAILED", "Invalid batch", [{ path: "batch.1.properties.x", message: "contains a NUL character" }]),
        },
        { status: 204 },
      ],
      {},
      3,
    );
    expect(requests).toHaveLength(2);
    const [first, second] = messageIds(requests[0]!) as string[];
    expect(messageIds(requests[1]!)).toEqual([first, messageIds(requests[0]!)[2]]);
    expect(failures).toHaveLength(1);
    expect(failures[0]!.events.map((e) => e.messageId)).toEqual([second]);
    // Paths are renumbered to index the reported events.
    expect(failures[0]!.error.issues).toEqual([{ path: "batch.0.properties.x", message: "contains a NUL character" }]);
    expect(stats).toMatchObject({ sent: 2, failed: 1 });
  });

  it("a 413 naming no event (the request as a whole was too large) sends the batch again in halves", async () => {
    let n = 0;
    fake = await fakeServer(() => (n++ === 0 ? { status: 413, body: "<html>Request Entity Too Large</html>" } : { status: 204 }));
    const failures: Failure[] = [];
    const c = new Tidings({ writeKey: "k", host: fake.url, onError: (error, events) => failures.push({ error, events }) });
    for (let i = 0; i < 3; i++) c.track({ userId: `u${i}`, event: "E" });
    await c.close();
    expect(fake.requests.map((r) => r.json.batch.length)).toEqual([3, 2, 1]);
    expect([...messageIds(fake.requests[1]!), ...messageIds(fake.requests[2]!)]).toEqual(messageIds(fake.requests[0]!));
    expect(failures).toEqual([]);
    expect(c.stats).toMatchObject({ sent: 3, failed: 0 });
  });
});
