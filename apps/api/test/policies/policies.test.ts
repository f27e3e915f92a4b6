// Delivery policies on a real server: the admin API, and messages held (Deferred, with the rule
// and notBefore), released when their time comes, checked again at release, skipped past their
// time-to-live, kept in each user's zone, and paced at a provider's rate; two workspaces with the
// same rule names and user ids never see each other's rules or sends.
import { DateTime } from "luxon";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../broadcasts/support.ts";
import { identify, segmentWorld, track } from "../segments/support.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { bearer, request } from "../support/http.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";

let t: TestApp;
let receiver: Receiver;
/** webhook-id → when it arrived (ms), per path. */
const arrivals = new Map<string, Map<string, number>>();

beforeAll(async () => {
  receiver = await startReceiver(({ id, path }, res) => {
    const m = arrivals.get(path) ?? new Map<string, number>();
    arrivals.set(path, m);
    if (!m.has(id)) m.set(id, Date.now());
    res.writeHead(200).end();
  });
  t = await createTestApp({ outboundAllowedHosts: ["127.0.0.1"] });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

const got = (path: string) => arrivals.get(path) ?? new Map<string, number>();

/** A workspace with users (each `plan: pro` plus `traits`), a webhook template to `path` and the given policies. */
async function world(path: string, policies: Record<string, unknown>, users: Record<string, Record<string, unknown>> = { ann: {} }) {
  const w = await segmentWorld(t);
  await w.send(Object.entries(users).map(([u, traits]) => identify(u, { plan: "pro", ...traits }, Date.now() - 1000)));
  const template = await w.admin("PUT", "/api/admin/content/templates", {
    name: "hook",
    definition: { type: "Webhook", url: `${receiver.url}${path}`, method: "POST", body: '{"user":"{{ user.id }}"}' },
  });
  await w.admin("PUT", "/api/admin/policies", policies);
  let n = 0;
  const broadcast = async (extra: Record<string, unknown> = {}) =>
    (
      await w.admin("POST", "/api/admin/broadcasts/execute", {
        broadcastName: `b-${n++}`,
        segmentDefinition: { entryNode: { type: "Trait", id: "p", path: "plan", operator: { type: "Equals", value: "pro" } }, nodes: [] },
        templateId: template.id,
        ...extra,
      })
    ).broadcastId as string;
  const deliveries = async (query = "") => (await w.admin("GET", `/api/admin/deliveries?limit=500${query}`)).items as any[];
  return { w, template, broadcast, deliveries };
}

const settled = (ds: any[]) => ds.every((d) => !["Queued", "Sending"].includes(d.status));

describe("PUT|GET /api/admin/policies", () => {
  it("stores the rules with their defaults, refuses mistakes with one issue each, and keeps each workspace's own", async () => {
    const a = await segmentWorld(t);
    const b = await segmentWorld(t);
    expect(await a.admin("GET", "/api/admin/policies")).toMatchObject({ frequencyCaps: [], sendWindows: [], timeToLiveSeconds: 259200 });
    const stored = await a.admin("PUT", "/api/admin/policies", {
      defaultTimezone: "Europe/Berlin",
      frequencyCaps: [{ name: "daily", limit: 3, window: { days: 1 } }],
      sendWindows: [{ name: "no nights", channel: "Sms", from: "08:00", to: "21:00" }],
      providerRates: [{ provider: "Twilio", perSecond: 1 }],
    });
    expect(stored).toMatchObject({
      frequencyCaps: [{ name: "daily", limit: 3, window: { days: 1 }, action: "defer" }],
      sendWindows: [{ name: "no nights", days: ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"], action: "defer" }],
      providerRates: [{ provider: "Twilio", perSecond: 1, burst: 1 }],
      updatedAt: expect.any(Number),
    });
    expect(await a.admin("GET", "/api/admin/policies")).toEqual(stored);
    expect((await b.admin("GET", "/api/admin/policies")).frequencyCaps).toEqual([]);

    const bad = async (body: unknown) => {
      const res = await request(t.url, "PUT", "/api/admin/policies", { headers: bearer(a.ws.adminKey), body });
      expect(res.status).toBe(400);
      return res.body.error.issues as { path: string; message: string }[];
    };
    expect(await bad({ defaultTimezone: "Mars/Olympus" })).toEqual([
      { path: "defaultTimezone", message: expect.stringMatching(/not an IANA time zone/) },
    ]);
    expect(await bad({ sendWindows: [{ name: "w", from: "25:00", to: "06:00" }] })).toEqual([
      { path: "sendWindows.0.from", message: expect.stringMatching(/HH:MM/) },
    ]);
    expect(await bad({ frequencyCaps: [{ name: "c", limit: 1, window: { days: 1, seconds: 5 } }] })).toEqual([
      { path: "frequencyCaps.0.window", message: "give exactly one of `seconds` and `days`" },
    ]);
    expect(await bad({ frequencyCaps: [{ name: "c", limit: 1, window: { days: 1 }, chanel: "Sms" }] })).toEqual([
      { path: "frequencyCaps.0.chanel", message: 'unknown field "chanel" (did you mean "channel"?)' },
    ]);
  });
});

describe("frequency caps", () => {
  it("defers over the cap with the rule and notBefore, then releases when the oldest send leaves the window", async () => {
    const { broadcast, deliveries, w } = await world("/release", {
      frequencyCaps: [{ name: "one per 6 s", limit: 1, window: { seconds: 6 } }],
    });
    await broadcast();
    await waitFor(deliveries, (ds) => ds.length === 1 && ds[0].status === "Sent");
    await broadcast();
    const held = (await waitFor(deliveries, (ds) => ds.some((d) => d.status === "Deferred"))).find((d) => d.status === "Deferred");
    expect(held.reason).toMatch(/^held: frequency cap "one per 6 s" \(1 per 6 s\) reached; room at /);
    expect(held.timezone).toBe("UTC");
    expect(held.timezoneSource).toBe("utc");
    const all = await waitFor(deliveries, (ds) => ds.length === 2 && ds.every((d) => d.status === "Sent"), 20_000);
    const late = got("/release").get(held.id)! - held.notBefore;
    expect(late).toBeGreaterThanOrEqual(0);
    expect(late).toBeLessThan(5000);
    expect(all.map((d) => d.attempts)).toEqual([1, 1]);
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    expect(metrics).toMatch(/tidings_deliveries_deferred_total\{channel="Webhook",rule="cap"\} [1-9]/);
    expect(metrics).toMatch(/tidings_deliveries_released_total\{channel="Webhook",rule=""\} [1-9]/);
    expect(w).toBeDefined();
  });

  it("checks again at release: a user who unsubscribed meanwhile is skipped", async () => {
    const { broadcast, deliveries, w } = await world("/recheck", {
      frequencyCaps: [{ name: "one per 6 s", limit: 1, window: { seconds: 6 } }],
    });
    const group = await w.admin("PUT", "/api/admin/subscription-groups", { name: "news", channel: "Webhook", type: "OptOut" });
    await broadcast({ subscriptionGroupId: group.id });
    await waitFor(deliveries, (ds) => ds.length === 1 && ds[0].status === "Sent");
    await broadcast({ subscriptionGroupId: group.id });
    await waitFor(deliveries, (ds) => ds.some((d) => d.status === "Deferred"));
    await w.admin("PUT", `/api/admin/subscription-groups/${group.id}/assignments`, { unsubscribe: ["ann"] });
    const done = await waitFor(deliveries, (ds) => ds.length === 2 && settled(ds) && !ds.some((d) => d.status === "Deferred"), 20_000);
    expect(done.map((d) => [d.status, d.reason ?? null]).sort()).toEqual([
      ["Sent", null],
      ["Skipped", "unsubscribed"],
    ]);
    expect(got("/recheck").size).toBe(1);
  });

  it("skips a message that would be held past its time-to-live; transactional messages pass a cap that does not name them", async () => {
    const { broadcast, deliveries } = await world("/ttl", {
      timeToLiveSeconds: 60,
      frequencyCaps: [{ name: "daily", limit: 1, window: { days: 1 } }],
    });
    await broadcast();
    await waitFor(deliveries, (ds) => ds.length === 1 && ds[0].status === "Sent");
    await broadcast();
    await broadcast({ category: "transactional" });
    const done = await waitFor(deliveries, (ds) => ds.length === 3 && settled(ds));
    const outcome = (status: string, category: string | null) =>
      done.filter((d) => d.status === status && (d.category ?? null) === category);
    expect([outcome("Sent", null), outcome("Sent", "transactional"), outcome("Skipped", null)].map((x) => x.length)).toEqual([1, 1, 1]);
    expect(done.find((d) => d.status === "Skipped").reason).toMatch(/^held past its time-to-live \(.+\): frequency cap "daily"/);
  });
});

describe("send windows", () => {
  it("holds a message until the window opens in the user's zone, stores the zone, and names a timezone trait that is not one", async () => {
    // A window that opens two hours from now in Kathmandu (+05:45) and lasts an hour.
    const local = new Date(Date.now() + (5 * 60 + 45) * 60_000 + 2 * 3600_000);
    const hh = (d: Date) => `${String(d.getUTCHours()).padStart(2, "0")}:00`;
    const from = hh(local);
    const to = hh(new Date(local.getTime() + 3600_000));
    const { broadcast, deliveries } = await world(
      "/window",
      { defaultTimezone: "Asia/Kathmandu", sendWindows: [{ name: "later", from, to }] },
      { ann: { timezone: "Asia/Kathmandu" }, bob: { timezone: "Mars/Olympus" }, cy: { timezone: "Asia/Tokyo" } },
    );
    await broadcast();
    const ds = await waitFor(deliveries, (x) => x.length === 3 && x.every((d) => d.status === "Deferred" || d.status === "Sent"));
    const by = Object.fromEntries(ds.map((d) => [d.userId, d]));
    expect(by.ann).toMatchObject({ status: "Deferred", timezone: "Asia/Kathmandu", timezoneSource: "trait" });
    expect(by.bob).toMatchObject({ status: "Deferred", timezone: "Asia/Kathmandu", timezoneSource: "invalid-trait" });
    expect(by.bob.reason).toContain('the timezone trait "Mars/Olympus" is not a zone');
    expect(by.cy).toMatchObject({ timezone: "Asia/Tokyo", timezoneSource: "trait" });
    // The opening: `from` today or tomorrow in Kathmandu, at a quarter to the UTC hour.
    expect(new Date(by.ann.notBefore).getUTCMinutes()).toBe(15);
    expect(by.ann.notBefore - Date.now()).toBeGreaterThan(3600_000);
    expect(by.ann.reason).toMatch(new RegExp(`^held: outside send window "later" \\(${from}–${to} Asia/Kathmandu; opens `));
    expect(got("/window").size).toBe(ds.filter((d) => d.status === "Sent").length);
  });

  it("a cancelled broadcast skips what it holds", async () => {
    const { broadcast, deliveries, w } = await world("/cancel", {
      sendWindows: [{ name: "never now", days: ["Mon"], from: "00:00", to: "00:01" }],
    });
    const id = await broadcast();
    await waitFor(deliveries, (ds) => ds.length === 1 && ds[0].status === "Deferred");
    const b = await w.admin("POST", `/api/admin/broadcasts/${id}/cancel`);
    expect(b.status).toBe("Cancelled");
    expect((await deliveries()).map((d) => [d.status, d.reason])).toEqual([["Skipped", "cancelled"]]);
  });
});

describe("journeys", () => {
  it("keep a run at its message node while the message is held, and move it on once sent; whenHeld: skip goes on at once", async () => {
    const { w, template, deliveries } = await world("/journey", {
      frequencyCaps: [{ name: "one per 6 s", limit: 1, window: { seconds: 6 } }],
    });
    const journey = async (name: string, whenHeld?: "skip") =>
      w.admin("PUT", "/api/admin/journeys", {
        name,
        status: "Running",
        definition: {
          entryNode: { type: "EventEntryNode", event: name, child: "first" },
          nodes: [
            { id: "first", type: "MessageNode", channel: "Webhook", templateId: template.id, child: "second" },
            {
              id: "second",
              type: "MessageNode",
              channel: "Webhook",
              templateId: template.id,
              child: "ExitNode",
              ...(whenHeld ? { whenHeld } : {}),
            },
          ],
        },
      });
    const waits = await journey("Go");
    await w.send([track({ userId: "ann" }, "Go", Date.now())]);
    const stats = (id: string) => w.admin("GET", `/api/admin/journeys/${id}/stats`);
    const node = (s: any, id: string) => s.nodes.find((n: { id: string }) => n.id === id);
    const held = await waitFor(
      () => stats(waits.id),
      (s) => node(s, "second").deferred === 1,
    );
    expect(node(held, "first")).toMatchObject({ sent: 1, waiting: 0 });
    expect(node(held, "second")).toMatchObject({ waiting: 1, deferred: 1, sent: 0 });
    expect(held.active).toBe(1);
    const done = await waitFor(
      () => stats(waits.id),
      (s) => s.completed === 1,
      20_000,
    );
    expect(node(done, "second")).toMatchObject({ waiting: 0, deferred: 0, sent: 1 });
    const runs = (await w.admin("GET", `/api/admin/journeys/${waits.id}/runs`)).items;
    const sentAt = (await deliveries(`&journeyId=${waits.id}`)).find((d) => d.nodeId === "second").updatedAt;
    expect(runs[0].endedAt).toBeGreaterThanOrEqual(sentAt);

    // The cap's window has room again after 6 s; wait for it, then a node that skips what is held.
    await new Promise((r) => setTimeout(r, 6100));
    const skips = await journey("Skip", "skip");
    await w.send([track({ userId: "ann" }, "Skip", Date.now())]);
    const skipped = await waitFor(
      () => stats(skips.id),
      (s) => s.completed === 1,
    );
    expect(node(skipped, "first").sent).toBe(1);
    expect(node(skipped, "second")).toMatchObject({ skipped: 1, deferred: 0 });
    const reason = (await deliveries(`&journeyId=${skips.id}`)).find((d) => d.nodeId === "second").reason;
    expect(reason).toMatch(/^skipped: frequency cap "one per 6 s"/);
  });
});

describe("local-time broadcasts", () => {
  it("queue each member's message for the time in the member's zone, tomorrow or at once when it has passed", async () => {
    const zones: Record<string, string | undefined> = {
      kat: "Asia/Kathmandu",
      ny: "America/New_York",
      kir: "Pacific/Kiritimati",
      pago: "Pacific/Pago_Pago",
      none: undefined,
    };
    const users = Object.fromEntries(Object.entries(zones).map(([u, z]) => [u, z ? { timezone: z } : {}]));
    const { broadcast, deliveries } = await world("/local", {}, users);
    const at = DateTime.utc().plus({ minutes: 2 });
    const hhmm = at.toFormat("HH:mm");
    /** When `hhmm` next comes in `zone` (today's, or tomorrow's once it has passed), and whether today's passed. */
    const expected = (zone: string) => {
      const now = DateTime.now().setZone(zone);
      const today = now.set({ hour: at.hour, minute: at.minute, second: 0, millisecond: 0 });
      return today.toMillis() >= now.toMillis()
        ? { passed: false, due: today.toMillis() }
        : { passed: true, due: today.plus({ days: 1 }).toMillis() };
    };
    const tomorrow = await broadcast({ sendAtLocalTime: hhmm });
    const now = await broadcast({ sendAtLocalTime: hhmm, ifLocalTimePassed: "now" });
    const ds = await waitFor(
      () => deliveries(),
      // Nothing in flight, and nothing Queued that is due already (the passed ones sent at once).
      (x) => x.length === 10 && x.every((d) => d.status !== "Sending" && !(d.status === "Queued" && d.notBefore === undefined)),
    );
    for (const [user, zone] of Object.entries(zones)) {
      const e = expected(zone ?? "UTC");
      const a = ds.find((d) => d.userId === user && d.broadcastId === tomorrow);
      const b = ds.find((d) => d.userId === user && d.broadcastId === now);
      expect(a, user).toMatchObject({ status: "Queued", notBefore: e.due });
      if (e.passed) expect(b.status, user).toBe("Sent");
      else expect(b, user).toMatchObject({ status: "Queued", notBefore: e.due });
    }
  });
});

describe("provider rates", () => {
  it("paces a provider across the workspace's senders: never more than the rate in any second", async () => {
    const users = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`u${i}`, {}]));
    const { broadcast, deliveries } = await world("/paced", { providerRates: [{ provider: "Webhook", perSecond: 4 }] }, users);
    await broadcast();
    await waitFor(deliveries, (ds) => ds.length === 16 && ds.every((d) => d.status === "Sent"), 20_000);
    const times = [...got("/paced").values()].sort((a, b) => a - b);
    expect(times).toHaveLength(16);
    // Spread at the rate: 16 messages take (16 − 1) turns of ~255 ms. Any second (sliding) holds at
    // most the rate, give or take one message whose request a loaded test machine sent late after
    // its turn (the next one still goes at its own turn).
    const busiest = Math.max(...times.map((t0) => times.filter((x) => x >= t0 && x < t0 + 1000).length));
    expect(busiest).toBeLessThanOrEqual(5);
    expect(times.at(-1)! - times[0]!).toBeGreaterThanOrEqual(3300);
  });
});

describe("two workspaces, the same names and user ids", () => {
  it("apply each workspace's rules to its own messages only", async () => {
    const capped = await world("/ws-a", { frequencyCaps: [{ name: "daily", limit: 1, window: { days: 1 } }] });
    const free = await world("/ws-b", {});
    await capped.broadcast();
    await free.broadcast();
    await waitFor(capped.deliveries, (ds) => ds.length === 1 && ds[0].status === "Sent");
    await waitFor(free.deliveries, (ds) => ds.length === 1 && ds[0].status === "Sent");
    await capped.broadcast();
    await free.broadcast();
    expect((await waitFor(free.deliveries, (ds) => ds.length === 2 && settled(ds))).map((d) => d.status)).toEqual(["Sent", "Sent"]);
    expect((await waitFor(capped.deliveries, (ds) => ds.length === 2 && settled(ds))).map((d) => d.status).sort()).toEqual([
      "Deferred",
      "Sent",
    ]);
  });
});
