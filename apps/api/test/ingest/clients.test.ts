// Real tracking libraries, configured only with our host (and path), deliver to the server.
import diagnostics from "node:diagnostics_channel";
import type { ClientRequest } from "node:http";
import { randomUUID } from "node:crypto";
import RudderAnalytics from "@rudderstack/rudder-sdk-node";
import { Analytics as SegmentAnalytics } from "@segment/analytics-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../support/app.ts";
import { getUser, listEvents } from "./helpers.ts";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

/** Checks that the identify, group and track each test sends for `userId` were stored intact. */
async function expectDelivered(userId: string, library: RegExp) {
  const events = await listEvents(t, { userId });
  const byType = Object.fromEntries(events.map((e) => [e.type, e]));
  expect(Object.keys(byType).sort()).toEqual(["group", "identify", "track"]);
  expect(byType.identify).toMatchObject({ userId, payload: { traits: { email: `${userId}@example.com`, plan: "pro", seats: 3 } } });
  expect(byType.track).toMatchObject({
    userId,
    event: "Order Completed",
    payload: { properties: { total: 42.5, currency: "EUR", items: [{ sku: "A-1", qty: 2 }] } },
  });
  for (const e of events) {
    expect(e.payload.context.library.name).toMatch(library);
    // Sent moments ago by a client with a sane clock: the stored time is "now".
    expect(Math.abs(e.timestamp - Date.now())).toBeLessThan(60_000);
  }
  const user = await getUser(t, userId);
  expect(user.status).toBe(200);
  expect(user.body.traits).toEqual({ email: `${userId}@example.com`, plan: "pro", seats: 3 });
  expect(user.body.groups).toEqual([expect.objectContaining({ groupId: "acme", traits: { name: "Acme Inc" } })]);
}

describe("@segment/analytics-node", () => {
  it.each([
    { name: "our path", path: "/api/public/apps/batch" as string | undefined },
    { name: "its default /v1/batch", path: undefined },
  ])("delivers identify, group and track ($name)", async ({ path }) => {
    const errors: unknown[] = [];
    const analytics = new SegmentAnalytics({
      writeKey: t.workspace.writeKey,
      host: t.url,
      ...(path ? { path } : {}),
      flushAt: 1,
      maxRetries: 0,
    });
    analytics.on("error", (err) => errors.push(err));
    const userId = `seg-${randomUUID()}`;
    analytics.identify({ userId, traits: { email: `${userId}@example.com`, plan: "pro", seats: 3 } });
    analytics.group({ userId, groupId: "acme", traits: { name: "Acme Inc" } });
    analytics.track({ userId, event: "Order Completed", properties: { total: 42.5, currency: "EUR", items: [{ sku: "A-1", qty: 2 }] } });
    await analytics.closeAndFlush({ timeout: 10_000 });
    expect(errors).toEqual([]);
    await expectDelivered(userId, /^@segment\/analytics-node$/);
    const [track] = await listEvents(t, { userId, event: "Order Completed" });
    expect(track.messageId).toMatch(/^node-next-/);
  });
});

describe("@rudderstack/rudder-sdk-node", () => {
  // 3.0.x needs Redis (bull) only for createPersistenceQueue(), which is not called: plain HTTP.
  it("delivers identify, group and track gzip-compressed to /v1/batch", async () => {
    // Watch the library's outgoing requests without changing how it sends them.
    const sent: { path: string; encoding: unknown; type: unknown }[] = [];
    const onRequest = (msg: unknown) => {
      const req = (msg as { request: ClientRequest }).request;
      if (req.host === "127.0.0.1")
        sent.push({ path: req.path, encoding: req.getHeader("content-encoding"), type: req.getHeader("content-type") });
    };
    diagnostics.subscribe("http.client.request.start", onRequest);
    const errors: unknown[] = [];
    const client = new RudderAnalytics(t.workspace.writeKey, {
      dataPlaneUrl: t.url,
      logLevel: "error",
      errorHandler: (e: unknown) => errors.push(e),
    });
    const userId = `rs-${randomUUID()}`;
    const cb = (err?: unknown) => err && errors.push(err);
    try {
      client.identify({ userId, traits: { email: `${userId}@example.com`, plan: "pro", seats: 3 } }, cb);
      client.group({ userId, groupId: "acme", traits: { name: "Acme Inc" } }, cb);
      client.track({ userId, event: "Order Completed", properties: { total: 42.5, currency: "EUR", items: [{ sku: "A-1", qty: 2 }] } }, cb);
      await client.flush();
    } finally {
      diagnostics.unsubscribe("http.client.request.start", onRequest);
    }
    expect(errors).toEqual([]);
    expect(sent.length).toBeGreaterThan(0);
    for (const s of sent) expect(s).toEqual({ path: "/v1/batch", encoding: "gzip", type: expect.stringMatching(/x-www-form-urlencoded/) });
    await expectDelivered(userId, /^analytics-node$/);
    // RudderStack sends device times plus sentAt: the stored time is the skew-corrected one.
    const [track] = await listEvents(t, { userId, event: "Order Completed" });
    const { originalTimestamp, sentAt } = track.payload;
    expect(track.timestamp).toBe(track.receivedAt - (Date.parse(sentAt) - Date.parse(originalTimestamp)));
  });
});
