// The ingestion client against the real server: what it sends is stored, once, under its messageId.
import { beforeAll, describe, expect, it } from "vitest";
import { type FetchLike, Tidings, type TidingsApiError, type TidingsEvent } from "../src/index.js";
import { newWorkspace, server, type Workspace } from "./support/env.js";

let ws: Workspace;
beforeAll(async () => {
  ws = await newWorkspace();
});

type Failure = { error: TidingsApiError; events: TidingsEvent[] };

function client(options: { writeKey?: string; fetch?: FetchLike; gzipMinBytes?: number; maxBatchEvents?: number } = {}) {
  const failures: Failure[] = [];
  const c = new Tidings({
    writeKey: ws.writeKey,
    host: server().url,
    onError: (error, events) => failures.push({ error, events }),
    ...options,
  });
  return { c, failures };
}

describe("ingestion against the server", () => {
  it("stores every event once, under the messageId it was sent with, with its time", async () => {
    const { c, failures } = client({ maxBatchEvents: 40 });
    const before = Date.now();
    for (let i = 0; i < 150; i++) c.track({ userId: "reader", event: "Article Read", messageId: `read-${i}`, properties: { i } });
    c.identify({ userId: "reader", traits: { email: "reader@example.test", plan: "pro" } });
    await c.close();
    expect(failures).toEqual([]);
    expect(c.stats).toEqual({ queued: 0, inFlight: 0, sent: 151, failed: 0 });

    const events = await ws.admin.events.list({ userId: "reader", event: "Article Read", limit: 100 }).toArray();
    expect(events.map((e) => e.messageId).sort()).toEqual(Array.from({ length: 150 }, (_, i) => `read-${i}`).sort());
    for (const e of events) {
      expect(e.timestamp).toBeGreaterThanOrEqual(before - 1000);
      expect(e.timestamp).toBeLessThanOrEqual(Date.now() + 1000);
      expect((e.payload.context as { library?: { name: string } }).library?.name).toBe("@tidings/sdk");
    }
    const user = await ws.admin.users.get("reader");
    expect(user.traits).toMatchObject({ email: "reader@example.test", plan: "pro" });
  });

  it("sends gzip bodies the server accepts", async () => {
    const { c, failures } = client({ gzipMinBytes: 1 });
    for (let i = 0; i < 20; i++) c.page({ anonymousId: "visitor-gz", name: "Pricing", properties: { i } });
    await c.close();
    expect(failures).toEqual([]);
    const events = await ws.admin.events.list({ userId: "visitor-gz" }).toArray();
    expect(events).toHaveLength(20);
  });

  it("runs on a plain fetch (edge runtimes): same wire, same result", async () => {
    let calls = 0;
    const viaFetch: FetchLike = (url, init) => {
      calls++;
      return fetch(url, init);
    };
    const { c, failures } = client({ fetch: viaFetch, gzipMinBytes: 1 });
    c.track({ userId: "edge-user", event: "Edge", messageId: "edge-1" });
    c.alias({ previousId: "edge-anon", userId: "edge-user" });
    await c.close();
    expect(failures).toEqual([]);
    expect(calls).toBe(1);
    const events = await ws.admin.events.list({ userId: "edge-user" }).toArray();
    expect(events.map((e) => e.type).sort()).toEqual(["alias", "track"]);
  });

  it("an event the server refuses is reported with the server's issue and request id; the rest of its batch is stored", async () => {
    const { c, failures } = client();
    c.track({ userId: "mixed", event: "Good", messageId: "good-1" });
    c.track({ userId: "mixed", event: "Bad", messageId: "bad-1", properties: { note: "nul \u0000 inside" } });
    c.track({ userId: "mixed", event: "Good", messageId: "good-2" });
    await c.close();
    expect(failures).toHaveLength(1);
    const { error, events } = failures[0]!;
    expect(error).toMatchObject({ name: "TidingsApiError", status: 400, code: "VALIDATION_FAILED" });
    expect(error.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(error.issues).toEqual([{ path: "batch.0.properties.note", message: "contains a NUL character" }]);
    expect(events.map((e) => e.messageId)).toEqual(["bad-1"]);
    const stored = await ws.admin.events.list({ userId: "mixed" }).toArray();
    expect(stored.map((e) => e.messageId).sort()).toEqual(["good-1", "good-2"]);
  });

  it("sendBatch: JSON lines and objects are stored once under their messageIds; a refused line is named with its own issue", async () => {
    const { c, failures } = client();
    const lines = [
      '{"type":"track","userId":"importer","event":"Imported","messageId":"imp-1"}',
      '{"type":"track","userId":"importer","event":"Imported","messageId":"imp-2","timestamp":"not a time"}',
    ];
    const first = await c.sendBatch([...lines, { type: "identify", userId: "importer", messageId: "imp-3", traits: { plan: "pro" } }]);
    expect(first.accepted).toBe(2);
    expect(first.undelivered).toEqual([]);
    expect(first.rejected).toHaveLength(1);
    expect(first.rejected[0]!.index).toBe(1);
    expect(first.rejected[0]!.error).toMatchObject({
      status: 400,
      code: "VALIDATION_FAILED",
      requestId: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(first.rejected[0]!.error.issues.map((i) => i.path)).toEqual(["timestamp"]);
    // Sent again (an import run twice): acknowledged, stored once.
    expect((await c.sendBatch([lines[0]!])).accepted).toBe(1);
    await c.close();
    expect(failures).toEqual([]);
    const stored = await ws.admin.events.list({ userId: "importer" }).toArray();
    expect(stored.map((e) => e.messageId).sort()).toEqual(["imp-1", "imp-3"]);
  });

  it("a revoked or unknown write key is reported once as UNAUTHORIZED, not retried", async () => {
    let calls = 0;
    const { c, failures } = client({
      writeKey: "tdw_not-a-key",
      fetch: (url, init) => {
        calls++;
        return fetch(url, init);
      },
    });
    c.track({ userId: "u", event: "E" });
    c.track({ userId: "u", event: "E" });
    await c.close();
    expect(calls).toBe(1);
    expect(failures).toHaveLength(1);
    expect(failures[0]!.error).toMatchObject({ status: 401, code: "UNAUTHORIZED" });
    expect(failures[0]!.events).toHaveLength(2);
  });
});
