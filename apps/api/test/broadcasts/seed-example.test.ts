// The interface spec's own example end to end: POST /api/admin/broadcasts/execute with
// {workspaceId, broadcastName, segmentDefinition (inline), messageTemplateDefinition (MobilePush),
// subscriptionGroupId}, sent through the Expo provider to a double of Expo's push API. One user
// unsubscribed from the (OptOut) group, one without an Expo push token, one whose token Expo
// answers DeviceNotRegistered: the double sees only the others, each title rendered for its user,
// and the broadcast's counts and deliveries say why each of the rest was not sent.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../support/app.ts";
import { bearer, request } from "../support/http.ts";
import { identify, segmentWorld } from "../segments/support.ts";
import { ExpoDouble, type ExpoMessage } from "../messaging/doubles/expo.ts";
import { broadcastEnd } from "./support.ts";

let t: TestApp;
let expo: ExpoDouble;

beforeAll(async () => {
  expo = await new ExpoDouble().start();
  // The provider double listens on 127.0.0.1, which only an allow-list lets a send reach.
  t = await createTestApp({ outboundAllowedHosts: ["127.0.0.1"] });
});
afterAll(async () => {
  await t?.close();
  await expo?.close();
});

const token = (name: string) => `ExponentPushToken[${name}-device]`;

describe("the interface spec's broadcast example (MobilePush through Expo)", () => {
  it("sends one push per subscribed member with a token, records skips and failures with reasons; a repeat sends nothing", async () => {
    const w = await segmentWorld(t);
    const now = Date.now();
    await w.send([
      identify("ann", { plan: "pro", name: "Ann", expoPushToken: token("ann") }, now - 1000), // unsubscribed
      identify("bob", { plan: "pro", name: "Bob", expoPushToken: token("bob") }, now - 1000),
      identify("cyd", { plan: "pro", name: "Cyd", expoPushToken: token("cyd") }, now - 1000),
      identify("dan", { plan: "pro", name: "Dan" }, now - 1000), // no token
      identify("eve", { plan: "pro", name: "Eve", expoPushToken: token("eve") }, now - 1000), // DeviceNotRegistered
      identify("fay", { plan: "free", name: "Fay", expoPushToken: token("fay") }, now - 1000), // not in the segment
    ]);
    expo.ticketErrors.set(token("eve"), "DeviceNotRegistered");

    const group = await w.admin("PUT", "/api/admin/subscription-groups", { name: "product news", channel: "MobilePush", type: "OptOut" });
    await w.admin("PUT", `/api/admin/subscription-groups/${group.id}/assignments`, { unsubscribe: ["ann"] });
    const provider = await w.admin("PUT", "/api/admin/providers", { channel: "MobilePush", type: "Expo", config: { baseUrl: expo.url } });
    expect(provider).toMatchObject({ channel: "MobilePush", type: "Expo", config: { baseUrl: expo.url } });

    const body = {
      workspaceId: w.ws.id,
      broadcastName: "spring-sale",
      segmentDefinition: {
        entryNode: { type: "Trait", id: "pro", path: "plan", operator: { type: "Equals", value: "pro" } },
        nodes: [],
      },
      messageTemplateDefinition: {
        type: "MobilePush",
        title: "Hi {{ user.name }}",
        body: "Your {{ user.plan }} plan has a gift",
        imageUrl: "https://img.example/{{ user.plan }}.png",
      },
      subscriptionGroupId: group.id,
    };
    const res = await request(t.url, "POST", "/api/admin/broadcasts/execute", { headers: bearer(w.ws.adminKey), body });
    expect(res.status, res.text).toBe(202);
    expect(res.body).toEqual({
      broadcastId: expect.any(String),
      broadcastName: "spring-sale",
      status: "Queued",
      repeat: false,
      createdAt: expect.any(Number),
    });
    const id = res.body.broadcastId as string;

    const b = await broadcastEnd(w, id);
    expect(b).toMatchObject({
      status: "Completed",
      channel: "MobilePush",
      subscriptionGroupId: group.id,
      counts: { audience: 5, sent: 2, failed: 1, skipped: 2, pending: 0, deferred: 0 },
    });

    // What Expo received: the three members with a token who did not unsubscribe, in requests of
    // at most 100 messages, each title and image rendered for its own user.
    const received: ExpoMessage[] = expo.batches.flatMap((x) => x.messages);
    expect(expo.batches.length).toBeGreaterThanOrEqual(1);
    for (const batch of expo.batches) {
      expect(batch.messages.length).toBeLessThanOrEqual(100);
      expect(batch.authorization).toBeUndefined();
    }
    expect(expo.requests.every((r) => r.path === "/--/api/v2/push/send" && r.method === "POST")).toBe(true);
    expect([...received].sort((a, b) => a.to.localeCompare(b.to))).toEqual([
      { to: token("bob"), title: "Hi Bob", body: "Your pro plan has a gift", richContent: { image: "https://img.example/pro.png" } },
      { to: token("cyd"), title: "Hi Cyd", body: "Your pro plan has a gift", richContent: { image: "https://img.example/pro.png" } },
      { to: token("eve"), title: "Hi Eve", body: "Your pro plan has a gift", richContent: { image: "https://img.example/pro.png" } },
    ]);
    const ticketOf = new Map(expo.batches.flatMap((x) => x.messages.map((m, k) => [m.to, x.ticketIds[k]] as const)));

    // The deliveries: one per member, with the status and the reason.
    const deliveries = await w.admin("GET", `/api/admin/deliveries?broadcastId=${id}&limit=100`);
    const byUser = new Map<string, any>(deliveries.items.map((d: any) => [d.userId, d]));
    expect([...byUser.keys()].sort()).toEqual(["ann", "bob", "cyd", "dan", "eve"]);
    for (const d of deliveries.items) expect(d).toMatchObject({ channel: "MobilePush", broadcastId: id });
    expect(byUser.get("ann")).toMatchObject({ status: "Skipped", reason: "unsubscribed" });
    expect(byUser.get("dan")).toMatchObject({ status: "Skipped", reason: "no expoPushToken trait" });
    expect(byUser.get("eve").status).toBe("Failed");
    expect(byUser.get("eve").reason).toMatch(/^DeviceNotRegistered: /);
    expect(byUser.get("eve").reason).toContain(token("eve"));
    expect(byUser.get("eve").providerMessageId).toBeUndefined();
    for (const u of ["bob", "cyd"]) {
      expect(byUser.get(u)).toMatchObject({ status: "Sent", providerMessageId: ticketOf.get(token(u)) });
      expect(byUser.get(u).reason).toBeUndefined();
    }

    // Re-executing the same body answers the same broadcast and sends nothing new.
    const requestsBefore = expo.requests.length;
    const again = await request(t.url, "POST", "/api/admin/broadcasts/execute", { headers: bearer(w.ws.adminKey), body });
    expect(again.status, again.text).toBe(202);
    expect(again.body).toMatchObject({ broadcastId: id, broadcastName: "spring-sale", status: "Completed" });
    await new Promise((r) => setTimeout(r, 1500));
    expect(expo.requests.length).toBe(requestsBefore);
    const after = await w.admin("GET", `/api/admin/broadcasts/${id}`);
    expect(after.counts).toEqual(b.counts);
    const list = await w.admin("GET", `/api/admin/deliveries?broadcastId=${id}&limit=100`);
    expect(list.items).toHaveLength(5);
  });
});
