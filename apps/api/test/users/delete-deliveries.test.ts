// DELETE /api/admin/users/:userId and the user's deliveries: the rows stay (their broadcasts'
// counts do not change) but no longer carry the contact point, the rendered content or the user
// id. Rows are read straight from PostgreSQL.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../support/app.ts";
import { bearer, request } from "../support/http.ts";
import { identify, segmentWorld, type SegmentWorld } from "../segments/support.ts";
import { ExpoDouble } from "../messaging/doubles/expo.ts";
import { broadcastEnd } from "../broadcasts/support.ts";

let t: TestApp;
let db: pg.Client;
let expo: ExpoDouble;

beforeAll(async () => {
  expo = await new ExpoDouble().start();
  // The provider double listens on 127.0.0.1, which only an allow-list lets a send reach.
  t = await createTestApp({ outboundAllowedHosts: ["127.0.0.1"] });
  db = new pg.Client({ connectionString: t.databaseUrl });
  await db.connect();
});
afterAll(async () => {
  await db?.end();
  await t?.close();
  await expo?.close();
});

async function broadcast(w: SegmentWorld, name: string) {
  const res = await w.admin("POST", "/api/admin/broadcasts/execute", {
    broadcastName: name,
    segmentDefinition: { entryNode: { type: "Trait", id: "p", path: "plan", operator: { type: "Equals", value: "pro" } }, nodes: [] },
    messageTemplateDefinition: {
      type: "Email",
      from: "hello@acme.test",
      subject: "{{ name }} for {{ user.name }}",
      body: "<p>Dear {{ user.name }} ({{ user.email }}, {{ user.id }})</p>",
    },
  });
  const b = await broadcastEnd(w, res.broadcastId);
  expect(b.status).toBe("Completed");
  return b;
}

interface Row {
  id: string;
  user_id: string;
  status: string;
  reason: string | null;
  contact: string | null;
  rendered: unknown;
}
const rowsOf = async (broadcastId: string) =>
  (await db.query<Row>("SELECT id, user_id, status, reason, contact, rendered FROM deliveries WHERE broadcast_id = $1", [broadcastId]))
    .rows;

describe("DELETE /api/admin/users/:userId and deliveries", () => {
  it("keeps the broadcast's counts but erases the user's contact point, rendered content and id from its deliveries", async () => {
    const w = await segmentWorld(t);
    const now = Date.now();
    await w.send([
      identify("zoe-1234", { plan: "pro", name: "Zoe Quartz", email: "zoe.quartz@example.test" }, now - 1000),
      identify("kim-5678", { plan: "pro", name: "Kim Lee", email: "kim.lee@example.test" }, now - 1000),
      identify("nomail-1", { plan: "pro", name: "No Mail" }, now - 1000),
    ]);
    const first = await broadcast(w, "first");
    const second = await broadcast(w, "second");
    for (const b of [first, second]) expect(b.counts).toEqual({ audience: 3, sent: 2, failed: 0, skipped: 1, pending: 0, deferred: 0 });

    // Before: zoe's rows name her.
    const zoeRows = (await Promise.all([first, second].map((b) => rowsOf(b.id)))).flat().filter((r) => r.user_id === "zoe-1234");
    expect(zoeRows).toHaveLength(2);
    for (const r of zoeRows) {
      expect(r).toMatchObject({ status: "Sent", contact: "zoe.quartz@example.test" });
      expect(JSON.stringify(r.rendered)).toContain("Zoe Quartz");
    }
    const zoeIds = new Set(zoeRows.map((r) => r.id));

    const del = await request(t.url, "DELETE", "/api/admin/users/zoe-1234", { headers: bearer(w.ws.adminKey) });
    expect(del.status, del.text).toBe(204);
    expect((await request(t.url, "GET", "/api/admin/users/zoe-1234", { headers: bearer(w.ws.adminKey) })).status).toBe(404);

    // The broadcasts' counts are unchanged.
    for (const b of [first, second]) {
      const after = await w.admin("GET", `/api/admin/broadcasts/${b.id}`);
      expect(after.counts).toEqual(b.counts);
      expect(after.status).toBe("Completed");
    }

    for (const b of [first, second]) {
      const rows = await rowsOf(b.id);
      expect(rows).toHaveLength(3);
      const erased = rows.filter((r) => zoeIds.has(r.id));
      expect(erased).toHaveLength(1);
      const [e] = erased;
      expect(e!.status).toBe("Sent");
      expect(e!.contact).toBeNull();
      expect(e!.rendered).toBeNull();
      expect(e!.user_id).not.toContain("zoe");
      // Kim's delivery is untouched.
      const kim = rows.find((r) => r.user_id === "kim-5678")!;
      expect(kim).toMatchObject({ status: "Sent", contact: "kim.lee@example.test" });
      expect(JSON.stringify(kim.rendered)).toContain("Kim Lee");
      // The read side lists the erased row without naming her.
      const listed = await w.admin("GET", `/api/admin/deliveries?broadcastId=${b.id}&limit=100`);
      expect(listed.items).toHaveLength(3);
      expect(JSON.stringify(listed.items)).not.toContain("zoe");
    }

    // Nothing left anywhere in the deliveries table names her.
    const { rows: leaks } = await db.query(
      "SELECT id FROM deliveries WHERE workspace_id = $1 AND (deliveries::text ILIKE '%zoe%' OR deliveries::text ILIKE '%quartz%')",
      [w.ws.id],
    );
    expect(leaks).toEqual([]);
  });

  // A provider's failure reason often quotes the contact point: Expo's DeviceNotRegistered ticket
  // ('"ExponentPushToken[…]" is not a registered push notification recipient'), ExpoSender's
  // InvalidExpoPushToken, SMTP rejections naming the address. Erasing the user scrubs it there too.
  it("erases the contact point from a failed delivery's reason too", async () => {
    const w = await segmentWorld(t);
    const now = Date.now();
    const zoeToken = "ExponentPushToken[zoe-quartz-phone]";
    const kimToken = "ExponentPushToken[kim-lee-phone]";
    await w.send([
      identify("zoe-1234", { plan: "pro", name: "Zoe Quartz", expoPushToken: zoeToken }, now - 1000),
      identify("kim-5678", { plan: "pro", name: "Kim Lee", expoPushToken: kimToken }, now - 1000),
    ]);
    expo.ticketErrors.set(zoeToken, "DeviceNotRegistered");
    await w.admin("PUT", "/api/admin/providers", { channel: "MobilePush", type: "Expo", config: { baseUrl: expo.url } });
    const res = await w.admin("POST", "/api/admin/broadcasts/execute", {
      broadcastName: "push",
      segmentDefinition: { entryNode: { type: "Trait", id: "p", path: "plan", operator: { type: "Equals", value: "pro" } }, nodes: [] },
      messageTemplateDefinition: { type: "MobilePush", title: "Hi {{ user.name }}", body: "News" },
    });
    const b = await broadcastEnd(w, res.broadcastId);
    expect(b.counts).toEqual({ audience: 2, sent: 1, failed: 1, skipped: 0, pending: 0, deferred: 0 });
    const before = (await rowsOf(b.id)).find((r) => r.user_id === "zoe-1234")!;
    expect(before).toMatchObject({ status: "Failed", contact: zoeToken });
    expect(before.reason).toMatch(/^DeviceNotRegistered: /);

    const del = await request(t.url, "DELETE", "/api/admin/users/zoe-1234", { headers: bearer(w.ws.adminKey) });
    expect(del.status, del.text).toBe(204);
    expect((await w.admin("GET", `/api/admin/broadcasts/${b.id}`)).counts).toEqual(b.counts);

    const after = (await rowsOf(b.id)).find((r) => r.id === before.id)!;
    expect(after).toMatchObject({ status: "Failed", contact: null, rendered: null });
    expect(after.user_id).not.toContain("zoe");
    expect(after.reason ?? "").not.toContain(zoeToken);
    const { rows: leaks } = await db.query(
      "SELECT id, reason FROM deliveries WHERE workspace_id = $1 AND (deliveries::text ILIKE '%zoe%' OR deliveries::text ILIKE '%quartz%')",
      [w.ws.id],
    );
    expect(leaks).toEqual([]);
  });
});
