// Broadcasts end to end in one server: execute → audience frozen → chunks sent through the real
// webhook sender to a receiver on 127.0.0.1 (allow-listed) or recorded by the Log provider →
// counts, skips with reasons, idempotency, cancel, and the deliveries read side.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../support/app.ts";
import { bearer, request } from "../support/http.ts";
import { identify, segmentWorld, type SegmentWorld } from "../segments/support.ts";
import { broadcastEnd, getBroadcast, plan, waitFor } from "./support.ts";

let t: TestApp;
let receiver: Server;
let receiverUrl: string;
let delay = 0;
const received: { id: string; body: string }[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      received.push({ id: String(req.headers["webhook-id"]), body });
      setTimeout(() => res.writeHead(200).end("ok"), delay);
    });
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  t = await createTestApp({ outboundAllowedHosts: ["127.0.0.1"] });
});
afterAll(async () => {
  await t?.close();
  await new Promise((r) => receiver.close(r));
});

const webhook = (tag: string) => ({
  type: "Webhook",
  url: `${receiverUrl}/hook`,
  method: "POST",
  body: `{"user":"{{ user.id }}","tag":"${tag}"}`,
});

async function users(w: SegmentWorld, n: number, traits: (i: number) => Record<string, unknown>) {
  const now = Date.now();
  await w.send(Array.from({ length: n }, (_, i) => identify(`user-${i}`, traits(i), now - 1000)));
}

describe("broadcasts", () => {
  it("sends each member of an inline segment exactly one signed webhook, then completes; a repeat sends nothing", async () => {
    const w = await segmentWorld(t);
    await users(w, 120, (i) => ({ plan: i % 3 === 0 ? "free" : "pro" }));
    const before = received.length;
    const body = { broadcastName: "pro-hook", segmentDefinition: plan("pro"), messageTemplateDefinition: webhook("a") };
    const res = await request(t.url, "POST", "/api/admin/broadcasts/execute", { headers: bearer(w.ws.adminKey), body });
    expect(res.status, res.text).toBe(202);
    expect(res.body).toEqual({
      broadcastId: expect.any(String),
      broadcastName: "pro-hook",
      status: "Queued",
      repeat: false,
      createdAt: expect.any(Number),
    });
    const b = await broadcastEnd(w, res.body.broadcastId);
    expect(b).toMatchObject({
      status: "Completed",
      channel: "Webhook",
      counts: { audience: 80, sent: 80, failed: 0, skipped: 0, pending: 0, deferred: 0 },
    });
    expect(b.startedAt).toBeLessThanOrEqual(b.completedAt);
    const mine = received.slice(before);
    expect(mine).toHaveLength(80);
    expect(new Set(mine.map((m) => m.id)).size).toBe(80);
    expect(mine.map((m) => JSON.parse(m.body).user).sort()).toEqual(
      Array.from({ length: 120 }, (_, i) => `user-${i}`)
        .filter((_, i) => i % 3 !== 0)
        .sort(),
    );
    // The webhook-id is the delivery id.
    const deliveries = await w.admin("GET", `/api/admin/deliveries?broadcastId=${b.id}&limit=500`);
    expect(new Set(deliveries.items.map((d: { id: string }) => d.id))).toEqual(new Set(mine.map((m) => m.id)));

    const again = await request(t.url, "POST", "/api/admin/broadcasts/execute", { headers: bearer(w.ws.adminKey), body });
    expect(again.status).toBe(202);
    expect(again.body.broadcastId).toBe(res.body.broadcastId);
    expect(again.body).toMatchObject({ repeat: true, createdAt: res.body.createdAt });
    const other = await request(t.url, "POST", "/api/admin/broadcasts/execute", {
      headers: bearer(w.ws.adminKey),
      body: { ...body, messageTemplateDefinition: webhook("b") },
    });
    expect(other.status).toBe(409);
    await new Promise((r) => setTimeout(r, 1500));
    expect(received.length - before).toBe(80);
  });

  it("an audience larger than the first slice: the rest is written while the first messages go out, each member once", async () => {
    const w = await segmentWorld(t);
    const n = 2_300; // more than two chunks (the first slice is one chunk, 1 000)
    for (let i = 0; i < n; i += 500) {
      await w.send(Array.from({ length: Math.min(500, n - i) }, (_, j) => identify(`big-${i + j}`, { plan: "pro" }, Date.now() - 1000)));
    }
    const before = received.length;
    const res = await request(t.url, "POST", "/api/admin/broadcasts/execute", {
      headers: bearer(w.ws.adminKey),
      body: { broadcastName: "big", segmentDefinition: plan("pro"), messageTemplateDefinition: webhook("big") },
    });
    expect(res.status, res.text).toBe(202);
    const b = await broadcastEnd(w, res.body.broadcastId, 30_000);
    expect(b).toMatchObject({ status: "Completed", counts: { audience: n, sent: n, failed: 0, skipped: 0, pending: 0, deferred: 0 } });
    const mine = received.slice(before).filter((m) => JSON.parse(m.body).tag === "big");
    expect(mine).toHaveLength(n);
    expect(new Set(mine.map((m) => JSON.parse(m.body).user)).size).toBe(n);
  });

  it("a start cut off after its first slice is completed by the tick: the whole audience, each member once", async () => {
    const w = await segmentWorld(t);
    await users(w, 30, () => ({ plan: "pro" }));
    const before = received.length;
    // What a start leaves when its process dies after the first slice's commit: the broadcast
    // still Queued (and older than the tick's 5 s), a few of its deliveries written.
    const { prisma } = t.ctx.db;
    const template = webhook("cut");
    const row = await prisma.broadcast.create({
      data: {
        workspaceId: w.ws.id,
        name: "cut-off",
        request: { broadcastName: "cut-off", segmentDefinition: plan("pro"), messageTemplateDefinition: template },
        channel: "Webhook",
        template,
        createdAt: new Date(Date.now() - 10_000),
        startedAt: new Date(Date.now() - 10_000),
      },
    });
    await prisma.delivery.createMany({
      data: ["user-0", "user-1", "user-2"].map((userId) => ({
        workspaceId: w.ws.id,
        userId,
        channel: "Webhook",
        broadcastId: row.id,
        status: "Queued",
      })),
    });
    const b = await broadcastEnd(w, row.id);
    expect(b).toMatchObject({ status: "Completed", counts: { audience: 30, sent: 30, failed: 0, skipped: 0, pending: 0, deferred: 0 } });
    const mine = received.slice(before).filter((m) => JSON.parse(m.body).tag === "cut");
    expect(mine.map((m) => JSON.parse(m.body).user).sort()).toEqual(Array.from({ length: 30 }, (_, i) => `user-${i}`).sort());
  });

  it("skips, with reasons, users without the channel's contact point and those who unsubscribed", async () => {
    const w = await segmentWorld(t);
    await users(w, 6, (i) => ({ plan: "pro", ...(i < 4 ? { email: `u${i}@example.test` } : {}) }));
    const group = await w.admin("PUT", "/api/admin/subscription-groups", { name: "news", channel: "Email", type: "OptOut" });
    await w.admin("PUT", `/api/admin/subscription-groups/${group.id}/assignments`, { unsubscribe: ["user-0"] });
    const res = await w.admin("POST", "/api/admin/broadcasts/execute", {
      broadcastName: "mail",
      segmentDefinition: plan("pro"),
      subscriptionGroupId: group.id,
      messageTemplateDefinition: {
        type: "Email",
        from: "hi@acme.test",
        subject: "Hi {{ user.id }}",
        body: "<p>Hello {{ user.email }}</p>",
      },
    });
    const b = await broadcastEnd(w, res.broadcastId);
    expect(b.counts).toEqual({ audience: 6, sent: 3, failed: 0, skipped: 3, pending: 0, deferred: 0 });
    const skipped = await w.admin("GET", `/api/admin/deliveries?broadcastId=${b.id}&status=Skipped`);
    expect(skipped.items.map((d: { userId: string; reason: string }) => [d.userId, d.reason]).sort()).toEqual([
      ["user-0", "unsubscribed"],
      ["user-4", "no email trait"],
      ["user-5", "no email trait"],
    ]);
    const sent = await w.admin("GET", `/api/admin/deliveries?broadcastId=${b.id}&status=Sent&channel=Email&userId=user-1`);
    expect(sent.items).toHaveLength(1);

    // Completed, its counts are kept with it (its deliveries no longer change) and read from there,
    // not counted again: here, not even once the rows are gone.
    const kept = await t.ctx.db.pool.query("SELECT final_counts FROM broadcasts WHERE workspace_id = $1 AND id = $2", [w.ws.id, b.id]);
    expect(kept.rows[0].final_counts).toEqual({ sent: 3, failed: 0, skipped: 3 });
    await t.ctx.db.pool.query("DELETE FROM deliveries WHERE workspace_id = $1 AND broadcast_id = $2", [w.ws.id, b.id]);
    expect((await w.admin("GET", `/api/admin/broadcasts/${b.id}`)).counts).toEqual(b.counts);
    const listed = (await w.admin("GET", "/api/admin/broadcasts")).items.find((x: { id: string }) => x.id === b.id);
    expect(listed.counts).toEqual(b.counts);
  });

  it("a stored segment and template; cancel stops sending within a second", async () => {
    const w = await segmentWorld(t);
    await users(w, 300, () => ({ plan: "pro" }));
    const segment = await w.segment(plan("pro") as never);
    await w.settle();
    const template = await w.admin("PUT", "/api/admin/content/templates", { name: "hook", definition: webhook("c") });
    delay = 20;
    try {
      const before = received.length;
      const res = await w.admin("POST", "/api/admin/broadcasts/execute", {
        broadcastName: "slow",
        segmentId: segment,
        templateId: template.id,
        rateLimitPerSecond: 100,
      });
      await waitFor(
        () => Promise.resolve(received.length - before),
        (n) => n >= 20,
      );
      const cancelled = await w.admin("POST", `/api/admin/broadcasts/${res.broadcastId}/cancel`);
      expect(cancelled.status).toBe("Cancelled");
      const atCancel = received.length - before;
      await new Promise((r) => setTimeout(r, 1500));
      const after = received.length - before;
      // What was in flight completes; nothing new starts.
      expect(after - atCancel).toBeLessThanOrEqual(100);
      const b = await getBroadcast(w, res.broadcastId);
      expect(b.counts.audience).toBe(300);
      expect(b.counts.sent).toBe(after);
      expect(b.counts.skipped).toBe(300 - after);
      expect(b.counts.pending).toBe(0);
      // The segment was held while the broadcast ran; it is free again.
      expect((await request(t.url, "DELETE", `/api/admin/segments/${segment}`, { headers: bearer(w.ws.adminKey) })).status).toBe(204);
    } finally {
      delay = 0;
    }
  });

  it("rejects what cannot be sent with a 400 naming the field", async () => {
    const w = await segmentWorld(t);
    const res = await request(t.url, "POST", "/api/admin/broadcasts/execute", {
      headers: bearer(w.ws.adminKey),
      body: { broadcastName: "x", segmentDefinition: plan("pro"), templateId: "00000000-0000-4000-8000-000000000000" },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.issues[0].path).toBe("templateId");
    const both = await request(t.url, "POST", "/api/admin/broadcasts/execute", {
      headers: bearer(w.ws.adminKey),
      body: { broadcastName: "x", segmentDefinition: plan("pro") },
    });
    expect(both.status).toBe(400);
  });
});
