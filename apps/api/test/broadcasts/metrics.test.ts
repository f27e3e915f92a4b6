// What GET /metrics says about a small broadcast: deliveries by channel and status, the time the
// provider took to answer, and the broadcasts in progress (queued or running) while one is held
// mid-send by a receiver that has not answered yet.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../support/app.ts";
import { request } from "../support/http.ts";
import { identify, segmentWorld } from "../segments/support.ts";
import { broadcastEnd, getBroadcast, waitFor } from "./support.ts";

let t: TestApp;
let receiver: Server;
let receiverUrl: string;
const received: string[] = [];
/** While set, the receiver holds its answers until it resolves. */
let gate: Promise<void> | null = null;

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", async () => {
      received.push(body);
      if (gate) await gate;
      res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  t = await createTestApp({ outboundAllowedHosts: ["127.0.0.1"] });
});
afterAll(async () => {
  await t?.close();
  receiver?.closeAllConnections();
  await new Promise((r) => receiver?.close(r));
});

/** Samples of the Prometheus text exposition: name → [labels, value]. */
async function scrape(): Promise<Map<string, { labels: Record<string, string>; value: number }[]>> {
  const res = await request(t.url, "GET", "/metrics");
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
  const out = new Map<string, { labels: Record<string, string>; value: number }[]>();
  for (const line of res.text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[k!] = v!;
    const list = out.get(m[1]!) ?? [];
    list.push({ labels, value: Number(m[3]) });
    out.set(m[1]!, list);
  }
  return out;
}

/** The value of the sample with exactly these labels (undefined when absent). */
function value(samples: Awaited<ReturnType<typeof scrape>>, name: string, labels: Record<string, string> = {}) {
  const want = JSON.stringify(Object.entries(labels).sort());
  return samples.get(name)?.find((s) => JSON.stringify(Object.entries(s.labels).sort()) === want)?.value;
}

describe("broadcast metrics", () => {
  it("counts deliveries by channel and status, times the provider, and shows the broadcast in progress", async () => {
    const w = await segmentWorld(t);
    const now = Date.now();
    await w.send(Array.from({ length: 5 }, (_, i) => identify(`user-${i}`, { plan: "pro" }, now - 1000)));
    const group = await w.admin("PUT", "/api/admin/subscription-groups", { name: "hooks", channel: "Webhook", type: "OptOut" });
    await w.admin("PUT", `/api/admin/subscription-groups/${group.id}/assignments`, { unsubscribe: ["user-4"] });

    const idle = await scrape();
    expect(value(idle, "tidings_broadcasts_in_progress")).toBe(0);
    expect(value(idle, "tidings_deliveries_total", { channel: "Webhook", status: "Sent" }) ?? 0).toBe(0);

    let release!: () => void;
    gate = new Promise<void>((r) => (release = r));
    let heldFor = 0;
    try {
      const res = await w.admin("POST", "/api/admin/broadcasts/execute", {
        broadcastName: "metered",
        segmentDefinition: { entryNode: { type: "Trait", id: "p", path: "plan", operator: { type: "Equals", value: "pro" } }, nodes: [] },
        messageTemplateDefinition: { type: "Webhook", url: `${receiverUrl}/hook`, method: "POST", body: '{"user":"{{ user.id }}"}' },
        subscriptionGroupId: group.id,
      });
      // Held mid-send: the receiver has the first requests and has not answered.
      await waitFor(
        () => Promise.resolve(received.length),
        (n) => n >= 1,
      );
      const heldAt = performance.now();
      const running = await scrape();
      expect(value(running, "tidings_broadcasts_in_progress")).toBe(1);
      // The first messages go out while the rest of the audience is written (Queued until then):
      // the broadcast becomes Running while the receiver still holds them.
      const started = await waitFor(
        () => getBroadcast(w, res.broadcastId),
        (x) => x.status !== "Queued",
      );
      expect(started.status).toBe("Running");
      expect(value(await scrape(), "tidings_broadcasts_in_progress")).toBe(1);
      await new Promise((r) => setTimeout(r, 300));
      heldFor = (performance.now() - heldAt) / 1000;
      gate = null;
      release();

      const b = await broadcastEnd(w, res.broadcastId);
      expect(b.counts).toEqual({ audience: 5, sent: 4, failed: 0, skipped: 1, pending: 0, deferred: 0 });
    } finally {
      gate = null;
      release();
    }

    const done = await scrape();
    expect(value(done, "tidings_deliveries_total", { channel: "Webhook", status: "Sent" })).toBe(4);
    expect(value(done, "tidings_deliveries_total", { channel: "Webhook", status: "Skipped" })).toBe(1);
    expect(value(done, "tidings_deliveries_total", { channel: "Webhook", status: "Failed" }) ?? 0).toBe(0);
    expect(value(done, "tidings_deliveries_total", { channel: "Webhook", status: "Retry" }) ?? 0).toBe(0);

    // One observation per send call to the provider (a chunk of messages), its time included.
    const count = value(done, "tidings_provider_request_duration_seconds_count", { provider: "Webhook" })!;
    const sum = value(done, "tidings_provider_request_duration_seconds_sum", { provider: "Webhook" })!;
    expect(count).toBeGreaterThanOrEqual(1);
    expect(count).toBeLessThanOrEqual(4);
    expect(value(done, "tidings_provider_request_duration_seconds_bucket", { provider: "Webhook", le: "+Inf" })).toBe(count);
    expect(sum).toBeGreaterThanOrEqual(heldFor * 0.9);
    expect(sum).toBeLessThan(15);

    expect(value(done, "tidings_broadcasts_in_progress")).toBe(0);
  });
});
