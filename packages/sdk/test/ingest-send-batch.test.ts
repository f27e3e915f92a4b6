// `sendBatch`: events sent now, apart from the queue, against a node:http server that fails on
// purpose: what became of each event (accepted, rejected with its own issues, undelivered), the
// retries it shares with the queue, and how a request is split when the server says it is too large.
import { afterEach, describe, expect, it } from "vitest";
import { Tidings, type TidingsOptions } from "../src/index.js";
import { envelope, type FakeServer, fakeServer, type Recorded, type Reply } from "./support/fake-server.js";

let fake: FakeServer | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function client(reply: (req: Recorded) => Reply, options: Partial<TidingsOptions> = {}) {
  fake = await fakeServer(reply);
  const errors: unknown[] = [];
  const c = new Tidings({
    writeKey: "k",
    host: fake.url,
    retryBaseDelayMs: 20,
    retryMaxDelayMs: 100,
    onError: (error) => errors.push(error),
    ...options,
  });
  return { c, requests: fake.requests, errors };
}

const line = (i: number) => `{"type":"track","userId":"u${i}","event":"E","messageId":"m-${i}"}`;
const messageIds = (r: Recorded) => (r.json.batch as { messageId: string }[]).map((e) => e.messageId);

describe("sendBatch", () => {
  it("sends strings as they are and objects completed, and counts what the server acknowledged", async () => {
    const { c, requests, errors } = await client(() => ({ status: 204 }));
    const result = await c.sendBatch([line(0), { type: "identify", userId: "ada", traits: { plan: "pro" } }, line(2)]);
    expect(result).toEqual({ accepted: 3, rejected: [], undelivered: [] });
    expect(requests).toHaveLength(1);
    // The string's own text is in the body, byte for byte.
    expect(requests[0]!.text).toContain(`[${line(0)},{`);
    const identify = requests[0]!.json.batch[1];
    expect(identify).toMatchObject({
      type: "identify",
      userId: "ada",
      messageId: expect.any(String),
      originalTimestamp: expect.any(String),
    });
    expect(requests[0]!.json.context.library.name).toBe("@tidings/sdk");
    expect(errors).toEqual([]);
    expect(c.stats).toEqual({ queued: 0, inFlight: 0, sent: 0, failed: 0 });
  });

  it("rejects the events the server names, each with its own issues, and sends the others again", async () => {
    const { c, requests } = await client((req) =>
      req.n === 1
        ? {
            status: 400,
            body: envelope("VALIDATION_FAILED", "Invalid batch", [
              { path: "batch.1.event", message: "Required" },
              { path: "batch.3", message: "Expected object" },
              { path: "batch.1.timestamp", message: "Invalid date" },
            ]),
          }
        : { status: 204 },
    );
    // Index 1 is refused locally (no identity): the server numbers the four it was sent.
    const result = await c.sendBatch([line(0), { type: "track", event: "E" } as never, line(2), line(3), line(4), line(5)]);
    expect(result.accepted).toBe(3);
    expect(result.undelivered).toEqual([]);
    expect(result.rejected.map((r) => r.index)).toEqual([1, 2, 4]);
    expect(result.rejected[0]!.error).toMatchObject({
      status: 0,
      code: "VALIDATION_FAILED",
      issues: [{ path: "userId", message: expect.any(String) }],
    });
    expect(result.rejected[1]!.error).toMatchObject({
      status: 400,
      code: "VALIDATION_FAILED",
      message: "Invalid batch: event: Required (and 1 more in err.issues)",
      requestId: "req-fake",
      issues: [
        { path: "event", message: "Required" },
        { path: "timestamp", message: "Invalid date" },
      ],
    });
    expect(result.rejected[2]!.error.issues).toEqual([{ path: "(event)", message: "Expected object" }]);
    expect(requests.map(messageIds)).toEqual([
      ["m-0", "m-2", "m-3", "m-4", "m-5"],
      ["m-0", "m-3", "m-5"],
    ]);
  });

  it("gives every event the error of a request refused as a whole", async () => {
    const { c } = await client(() => ({ status: 400, body: envelope("VALIDATION_FAILED", "Body must be a JSON object") }));
    const result = await c.sendBatch([line(0), line(1)]);
    expect(result.accepted).toBe(0);
    expect(result.rejected).toEqual([
      { index: 0, error: expect.objectContaining({ status: 400, message: "Body must be a JSON object", issues: [] }) },
      { index: 1, error: expect.objectContaining({ status: 400, message: "Body must be a JSON object", issues: [] }) },
    ]);
  });

  it("sends a request the server finds too large in halves", async () => {
    const { c, requests } = await client((req) =>
      req.json.batch.length > 2 ? { status: 413, body: "<html>413 Request Entity Too Large</html>" } : { status: 204 },
    );
    const result = await c.sendBatch([0, 1, 2, 3, 4].map(line));
    expect(result).toEqual({ accepted: 5, rejected: [], undelivered: [] });
    expect(requests.map(messageIds)).toEqual([
      ["m-0", "m-1", "m-2", "m-3", "m-4"],
      ["m-0", "m-1", "m-2"],
      ["m-0", "m-1"],
      ["m-2"],
      ["m-3", "m-4"],
    ]);
  });

  it("cuts the events into requests of maxBatchEvents and maxBatchBytes", async () => {
    const { c, requests } = await client(() => ({ status: 204 }), { maxBatchEvents: 2 });
    const result = await c.sendBatch([0, 1, 2, 3, 4].map(line));
    expect(result.accepted).toBe(5);
    expect(requests.map(messageIds)).toEqual([["m-0", "m-1"], ["m-2", "m-3"], ["m-4"]]);
  });

  it("retries a 503 honouring Retry-After, with the same events", async () => {
    const { c, requests } = await client((req) =>
      req.n === 1 ? { status: 503, headers: { "retry-after": "1" }, body: envelope("UNAVAILABLE", "overloaded") } : { status: 204 },
    );
    const result = await c.sendBatch([line(0), line(1)]);
    expect(result.accepted).toBe(2);
    expect(requests).toHaveLength(2);
    expect(requests[1]!.at - requests[0]!.at).toBeGreaterThanOrEqual(950);
    expect(messageIds(requests[1]!)).toEqual(messageIds(requests[0]!));
  });

  it("once a request fails for good (401), leaves the events not yet sent undelivered with that error", async () => {
    const { c, requests } = await client(() => ({ status: 401, body: envelope("UNAUTHORIZED", "Unknown write key") }), {
      maxBatchEvents: 2,
    });
    const result = await c.sendBatch([0, 1, 2, 3, 4].map(line));
    expect(requests).toHaveLength(1);
    expect(result.accepted).toBe(0);
    expect(result.rejected).toEqual([]);
    expect(result.undelivered.map((u) => u.index)).toEqual([0, 1, 2, 3, 4]);
    expect(result.undelivered[4]!.error).toMatchObject({ status: 401, code: "UNAUTHORIZED", requestId: "req-fake" });
  });

  it("an answer that is not the envelope (a proxy's page) gets a code from the closed list and the x-request-id header", async () => {
    const { c, requests } = await client(
      () => ({ status: 502, headers: { "x-request-id": "lb-7", "content-type": "text/html" }, body: "<html>Bad Gateway</html>" }),
      {
        maxRetries: 1,
      },
    );
    const result = await c.sendBatch([line(0)]);
    expect(requests).toHaveLength(2);
    expect(result.undelivered).toEqual([
      { index: 0, error: expect.objectContaining({ status: 502, code: "INTERNAL", message: "HTTP 502", requestId: "lb-7" }) },
    ]);
  });

  it("reports a server that cannot be reached as NETWORK, and a closed client as CLOSED", async () => {
    const c = new Tidings({ writeKey: "k", host: "http://127.0.0.1:9", maxRetries: 1, retryBaseDelayMs: 1, onError: () => {} });
    const result = await c.sendBatch([line(0)]);
    expect(result.undelivered[0]!.error).toMatchObject({ status: 0, code: "NETWORK", message: expect.stringMatching(/ECONNREFUSED/) });
    await c.close();
    const closed = await c.sendBatch([line(0)]);
    expect(closed.undelivered[0]!.error.code).toBe("CLOSED");
  });
});
