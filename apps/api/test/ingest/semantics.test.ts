// What ingestion does with accepted events: dedup, event time, trait merging, identity linking,
// groups, batch context and the stored payload.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../support/app.ts";
import { expect204, getUser, ingest, listEvents, mid } from "./helpers.ts";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

const uid = (tag: string) => `${tag}-${randomUUID()}`;
const iso = (ms: number) => new Date(ms).toISOString();
const T0 = Date.UTC(2024, 0, 1, 12);

async function storedOne(messageId: string, userId: string) {
  const found = (await listEvents(t, { userId })).filter((e) => e.messageId === messageId);
  expect(found).toHaveLength(1);
  return found[0];
}

describe("replays", () => {
  // A group event sends the commit down the multi-statement path; without one it may take the
  // single-statement one. Both must honour replays.
  it.each([false, true])(
    "a replayed batch is acknowledged, stored once, its identify not applied again (with group: %s)",
    async (withGroup) => {
      const user = uid("replay");
      // Equal event times: the later-processed identify wins, so a re-applied replay would show.
      const first = {
        batch: [
          { type: "identify", userId: user, messageId: mid(), timestamp: iso(T0), traits: { plan: "a", seats: 1 } },
          { type: "track", userId: user, messageId: mid(), event: "Ordered", timestamp: iso(T0) },
          ...(withGroup ? [{ type: "group", userId: user, messageId: mid(), groupId: "g-replay", timestamp: iso(T0) }] : []),
        ],
      };
      expect204(await ingest(t, "batch", first));
      expect204(await ingest(t, "identify", { userId: user, messageId: mid(), timestamp: iso(T0), traits: { plan: "b" } }));
      expect((await getUser(t, user)).body.traits).toEqual({ plan: "b", seats: 1 });

      expect204(await ingest(t, "/v1/batch", first));
      await Promise.all(Array.from({ length: 4 }, () => ingest(t, "batch", first).then(expect204)));
      const events = await listEvents(t, { userId: user });
      expect(events).toHaveLength(first.batch.length + 1);
      expect((await getUser(t, user)).body.traits).toEqual({ plan: "b", seats: 1 });
    },
  );

  it("the same messageId twice in one batch is stored once", async () => {
    const user = uid("twice");
    const id = mid();
    expect204(await ingest(t, "batch", { batch: [1, 2].map((n) => ({ type: "track", userId: user, messageId: id, event: `E${n}` })) }));
    expect(await listEvents(t, { userId: user })).toHaveLength(1);
  });

  it("a messageId is generated when absent, so identical bodies without one are separate events", async () => {
    const user = uid("gen");
    const body = { userId: user, event: "Tick" };
    expect204(await ingest(t, "track", body));
    expect204(await ingest(t, "track", body));
    const events = await listEvents(t, { userId: user });
    expect(events).toHaveLength(2);
    for (const e of events) expect(e.messageId).toMatch(/^[0-9a-f-]{36}$/);
    expect(events[0].messageId).not.toBe(events[1].messageId);
  });
});

describe("event time", () => {
  it("corrects a device clock 1 h ahead with sentAt and originalTimestamp (item level)", async () => {
    const user = uid("skew");
    const device = Date.now() + 3_600_000;
    const ev = { userId: user, messageId: mid(), event: "Skewed", originalTimestamp: iso(device - 10_000), sentAt: iso(device) };
    expect204(await ingest(t, "track", ev));
    const stored = await storedOne(ev.messageId, user);
    expect(stored.timestamp).toBe(stored.receivedAt - 10_000);
    expect(Math.abs(stored.receivedAt - Date.now())).toBeLessThan(60_000);
  });

  it("uses batch-level sentAt for items without their own; an item's sentAt wins", async () => {
    const user = uid("bskew");
    const device = Date.now() + 3_600_000;
    const a = { type: "track", userId: user, messageId: mid(), event: "A", originalTimestamp: iso(device - 5_000) };
    const b = {
      type: "track",
      userId: user,
      messageId: mid(),
      event: "B",
      originalTimestamp: iso(device - 5_000),
      sentAt: iso(device - 2_000),
    };
    expect204(await ingest(t, "batch", { sentAt: iso(device), batch: [a, b] }));
    const sa = await storedOne(a.messageId, user);
    const sb = await storedOne(b.messageId, user);
    expect(sa.timestamp).toBe(sa.receivedAt - 5_000);
    expect(sb.timestamp).toBe(sb.receivedAt - 3_000);
  });

  it("uses `timestamp` as-is (historical imports), offsets included", async () => {
    const user = uid("ts");
    const a = { userId: user, messageId: mid(), event: "Old", timestamp: "2019-05-01T12:00:00.123Z" };
    const b = { userId: user, messageId: mid(), event: "Offset", timestamp: "2019-05-01T14:00:00+02:00", sentAt: iso(Date.now()) };
    expect204(await ingest(t, "track", a));
    expect204(await ingest(t, "track", b));
    expect((await storedOne(a.messageId, user)).timestamp).toBe(Date.parse("2019-05-01T12:00:00.123Z"));
    expect((await storedOne(b.messageId, user)).timestamp).toBe(Date.parse("2019-05-01T12:00:00Z"));
  });

  it("falls back to originalTimestamp alone, then to receivedAt", async () => {
    const user = uid("fallback");
    const a = { userId: user, messageId: mid(), event: "A", originalTimestamp: "2021-02-03T04:05:06Z" };
    const b = { userId: user, messageId: mid(), event: "B" };
    expect204(await ingest(t, "track", a));
    expect204(await ingest(t, "track", b));
    expect((await storedOne(a.messageId, user)).timestamp).toBe(Date.parse("2021-02-03T04:05:06Z"));
    const sb = await storedOne(b.messageId, user);
    expect(sb.timestamp).toBe(sb.receivedAt);
  });
});

describe("identify", () => {
  it("merges traits per key; an older identify arriving later does not overwrite newer values", async () => {
    const user = uid("ooo");
    expect204(await ingest(t, "identify", { userId: user, timestamp: iso(T0 + 60_000), traits: { plan: "pro", seats: 5 } }));
    expect204(await ingest(t, "identify", { userId: user, timestamp: iso(T0), traits: { plan: "free", company: "Acme" } }));
    expect((await getUser(t, user)).body.traits).toEqual({ plan: "pro", seats: 5, company: "Acme" });
    expect204(await ingest(t, "identify", { userId: user, timestamp: iso(T0 + 120_000), traits: { plan: "enterprise" } }));
    expect((await getUser(t, user)).body.traits).toEqual({ plan: "enterprise", seats: 5, company: "Acme" });
  });

  it("applies the same rule to out-of-order identifies inside one batch", async () => {
    const user = uid("ooo-batch");
    expect204(
      await ingest(t, "batch", {
        batch: [
          { type: "identify", userId: user, timestamp: iso(T0 + 1000), traits: { color: "blue" } },
          { type: "identify", userId: user, timestamp: iso(T0), traits: { color: "red", size: "M" } },
        ],
      }),
    );
    expect((await getUser(t, user)).body.traits).toEqual({ color: "blue", size: "M" });
  });

  // A profile remembers its newest trait time, so an identify at least that new is merged by plain
  // concatenation. These fail if any merge path forgets to carry that time forward.
  it("keeps newer values after a batch whose identifies carry different times", async () => {
    const user = uid("mixed");
    expect204(await ingest(t, "identify", { userId: user, timestamp: iso(T0 + 100), traits: { a: 1 } }));
    expect204(
      await ingest(t, "batch", {
        batch: [
          { type: "identify", userId: user, timestamp: iso(T0 + 50), traits: { b: 1 } },
          { type: "identify", userId: user, timestamp: iso(T0 + 200), traits: { c: 1 } },
        ],
      }),
    );
    expect204(await ingest(t, "identify", { userId: user, timestamp: iso(T0 + 150), traits: { a: 2, c: 2 } }));
    expect((await getUser(t, user)).body.traits).toEqual({ a: 2, b: 1, c: 1 });
  });

  it("keeps newer values brought in by an identity link", async () => {
    const anon = uid("link-anon");
    const user = uid("link-user");
    expect204(await ingest(t, "identify", { anonymousId: anon, timestamp: iso(T0 + 300), traits: { x: "anon" } }));
    expect204(await ingest(t, "identify", { userId: user, timestamp: iso(T0 + 100), traits: { y: 1 } }));
    expect204(await ingest(t, "identify", { userId: user, anonymousId: anon, timestamp: iso(T0 + 110) }));
    expect204(await ingest(t, "identify", { userId: user, timestamp: iso(T0 + 200), traits: { x: "user", y: 2 } }));
    expect((await getUser(t, user)).body.traits).toEqual({ x: "anon", y: 2 });
  });
});

describe("identity linking", () => {
  it("identify with anonymousId + userId brings the anonymous history and traits to the user", async () => {
    const anon = uid("anon");
    const user = uid("user");
    expect204(await ingest(t, "page", { anonymousId: anon, name: "Pricing", timestamp: iso(T0) }));
    expect204(await ingest(t, "track", { anonymousId: anon, event: "Viewed Plan", timestamp: iso(T0 + 1000) }));
    expect204(await ingest(t, "identify", { anonymousId: anon, timestamp: iso(T0 + 1500), traits: { referrer: "ad", plan: "trial" } }));
    expect204(
      await ingest(t, "identify", { anonymousId: anon, userId: user, timestamp: iso(T0 + 2000), traits: { email: "a@x.io", plan: "pro" } }),
    );

    const res = await getUser(t, user);
    expect(res.status).toBe(200);
    expect(res.body.userId).toBe(user);
    expect(res.body.identities).toEqual([anon]);
    expect(res.body.traits).toEqual({ referrer: "ad", plan: "pro", email: "a@x.io" });
    expect(res.body.recentEvents.map((e: { type: string }) => e.type)).toEqual(["identify", "identify", "track", "page"]);
    expect(res.body.firstSeenAt).toBe(T0);

    const viaAnon = await getUser(t, anon);
    expect(viaAnon.status).toBe(200);
    expect(viaAnon.body.userId).toBe(user);
    expect(viaAnon.body.traits).toEqual(res.body.traits);
    expect((await listEvents(t, { userId: anon })).length).toBe(4);

    // Later anonymous activity belongs to the user too.
    expect204(await ingest(t, "identify", { anonymousId: anon, timestamp: iso(T0 + 3000), traits: { theme: "dark" } }));
    expect204(await ingest(t, "track", { anonymousId: anon, event: "Came Back", timestamp: iso(T0 + 4000) }));
    const after = await getUser(t, user);
    expect(after.body.traits).toMatchObject({ theme: "dark", email: "a@x.io" });
    expect(after.body.recentEvents[0].event).toBe("Came Back");
  });

  it("alias(previousId → userId) links an old id and its traits, events and groups", async () => {
    const old = uid("old");
    const user = uid("new");
    expect204(await ingest(t, "identify", { userId: old, timestamp: iso(T0), traits: { legacy: true } }));
    expect204(await ingest(t, "group", { userId: old, groupId: "g-alias", timestamp: iso(T0), traits: { name: "Old Co" } }));
    expect204(await ingest(t, "track", { userId: old, event: "Legacy Action", timestamp: iso(T0 + 1) }));
    expect204(await ingest(t, "alias", { previousId: old, userId: user, timestamp: iso(T0 + 2) }));
    const res = await getUser(t, user);
    expect(res.status).toBe(200);
    expect(res.body.identities).toEqual([old]);
    expect(res.body.traits).toEqual({ legacy: true });
    expect(res.body.groups.map((g: { groupId: string }) => g.groupId)).toEqual(["g-alias"]);
    expect(res.body.recentEvents.map((e: { type: string }) => e.type).sort()).toEqual(["alias", "group", "identify", "track"]);
    expect((await getUser(t, old)).body.userId).toBe(user);
  });

  it("links inside one batch (events before the identify included)", async () => {
    const anon = uid("banon");
    const user = uid("buser");
    expect204(
      await ingest(t, "batch", {
        batch: [
          { type: "track", anonymousId: anon, event: "Browse", timestamp: iso(T0) },
          { type: "identify", anonymousId: anon, userId: user, timestamp: iso(T0 + 1), traits: { name: "Ann" } },
          { type: "track", userId: user, event: "Buy", timestamp: iso(T0 + 2) },
        ],
      }),
    );
    expect((await listEvents(t, { userId: user })).map((e) => e.event)).toEqual(["Buy", null, "Browse"]);
    expect((await getUser(t, anon)).body).toMatchObject({ userId: user, identities: [anon], traits: { name: "Ann" } });
  });
});

describe("groups", () => {
  it("records membership and merges group traits by event time", async () => {
    const user = uid("grp");
    const other = uid("grp2");
    const g1 = uid("acme");
    expect204(await ingest(t, "group", { userId: user, groupId: g1, timestamp: iso(T0 + 10), traits: { name: "Acme", tier: "gold" } }));
    expect204(await ingest(t, "group", { userId: other, groupId: g1, timestamp: iso(T0), traits: { tier: "silver", size: 50 } }));
    expect204(await ingest(t, "/v1/group", { userId: user, groupId: "g-second", timestamp: iso(T0 + 20) }));
    const res = await getUser(t, user);
    expect(res.body.groups).toEqual([
      { groupId: g1, traits: { name: "Acme", tier: "gold", size: 50 }, joinedAt: T0 + 10 },
      { groupId: "g-second", traits: {}, joinedAt: T0 + 20 },
    ]);
    expect((await getUser(t, other)).body.groups).toEqual([
      { groupId: g1, traits: { name: "Acme", tier: "gold", size: 50 }, joinedAt: T0 },
    ]);
    // group does not touch user traits
    expect(res.body.traits).toEqual({});
  });

  it("numeric ids are accepted and stored as strings", async () => {
    const n = Math.floor(Math.random() * 1e9);
    expect204(await ingest(t, "group", { userId: n, groupId: 42 }));
    const res = await getUser(t, String(n));
    expect(res.status).toBe(200);
    expect(res.body.groups[0].groupId).toBe("42");
  });
});

describe("stored payload", () => {
  it("batch-level context and integrations are merged under each item's (the item wins)", async () => {
    const user = uid("ctx");
    const a = { type: "track", userId: user, messageId: mid(), event: "A", context: { ip: "2.2.2.2", page: { path: "/a" } } };
    const b = { type: "track", userId: user, messageId: mid(), event: "B", integrations: { Slack: true } };
    expect204(
      await ingest(t, "batch", {
        context: { ip: "1.1.1.1", locale: "fr-FR", library: { name: "lib" } },
        integrations: { All: false, Slack: false },
        batch: [a, b],
      }),
    );
    const sa = await storedOne(a.messageId, user);
    const sb = await storedOne(b.messageId, user);
    expect(sa.payload.context).toEqual({ ip: "2.2.2.2", locale: "fr-FR", library: { name: "lib" }, page: { path: "/a" } });
    expect(sb.payload.context).toEqual({ ip: "1.1.1.1", locale: "fr-FR", library: { name: "lib" } });
    expect(sb.payload.integrations).toEqual({ All: false, Slack: true });
  });

  it("keeps unknown fields and the event as sent", async () => {
    const user = uid("unknown");
    const ev = {
      userId: user,
      messageId: mid(),
      event: "Checkout",
      properties: { total: 12.5, items: [{ sku: "x" }], nested: { deep: null } },
      channel: "server",
      _metadata: { nodeVersion: "20" },
      custom: { anything: [1, "two", false] },
    };
    expect204(await ingest(t, "track", ev));
    const stored = await storedOne(ev.messageId, user);
    expect(stored).toMatchObject({ type: "track", userId: user, anonymousId: null, event: "Checkout" });
    expect(stored.payload).toEqual({ ...ev, type: "track" });
  });

  it("page and screen store their name as the event name", async () => {
    const user = uid("names");
    expect204(await ingest(t, "page", { userId: user, name: "Docs", properties: { url: "https://x.io/docs" } }));
    expect204(await ingest(t, "screen", { userId: user, name: "Settings" }));
    const events = await listEvents(t, { userId: user });
    expect(events.map((e) => [e.type, e.event]).sort()).toEqual([
      ["page", "Docs"],
      ["screen", "Settings"],
    ]);
  });
});
