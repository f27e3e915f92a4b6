// The segment engine per node type and operator: events in through the public API, membership
// out through the admin API, time moved with the engine's clock (no sleeps). Semantics:
// docs/segments.md.
import { createHash } from "node:crypto";
import type { SegmentDefinition } from "@tidings/schema";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { segmentDependencies } from "../../src/segments/engine/compile.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { DAY, identify, SECOND, segmentWorld, single, type TestEvent, TestClock, track } from "./support.ts";

const HOUR = 3_600_000;
let t: TestApp;
const clock = new TestClock();
const T = clock.now;

beforeAll(async () => {
  t = await createTestApp({ clock: clock.read });
});
afterAll(() => t?.close());

interface Case {
  name: string;
  events: (T: number) => TestEvent[];
  definition: SegmentDefinition;
  members: string[];
  /** Then, after moving the clock by `advance` ms: */
  later?: { advance: number; members: string[] }[];
}

const trait = (path: string, operator: object) => single({ type: "Trait", path, operator } as never);
const seen = (userId: string) => track({ userId }, "Seen", T - HOUR);

const cases: Case[] = [
  {
    name: "Trait Equals compares strings exactly",
    events: (T) => [
      identify("a", { plan: "pro" }, T - HOUR),
      identify("b", { plan: "free" }, T - HOUR),
      identify("c", { plan: "pro " }, T - HOUR),
    ],
    definition: trait("plan", { type: "Equals", value: "pro" }),
    members: ["a"],
  },
  {
    name: 'Trait Equals compares by type: 30 is not "30"',
    events: (T) => [identify("a", { age: 30 }, T - HOUR), identify("b", { age: "30" }, T - HOUR)],
    definition: trait("age", { type: "Equals", value: 30 }),
    members: ["a"],
  },
  {
    name: "Trait NotEquals: a missing or null trait is not a member",
    events: (T) => [
      identify("a", { plan: "pro" }, T - HOUR),
      identify("b", { plan: "free" }, T - HOUR),
      seen("c"),
      identify("d", { plan: null }, T - HOUR),
    ],
    definition: trait("plan", { type: "NotEquals", value: "pro" }),
    members: ["b"],
  },
  {
    name: "Trait Exists",
    events: (T) => [identify("a", { x: 0 }, T - HOUR), identify("b", { x: null }, T - HOUR), seen("c")],
    definition: trait("x", { type: "Exists" }),
    members: ["a"],
  },
  {
    name: "Trait NotExists: absent or null",
    events: (T) => [identify("a", { x: false }, T - HOUR), identify("b", { x: null }, T - HOUR), seen("c")],
    definition: trait("x", { type: "NotExists" }),
    members: ["b", "c"],
  },
  {
    name: "Trait GreaterThanOrEqual: numbers only",
    events: (T) => [identify("a", { n: 10 }, T - HOUR), identify("b", { n: 5 }, T - HOUR), identify("c", { n: "20" }, T - HOUR), seen("d")],
    definition: trait("n", { type: "GreaterThanOrEqual", value: 10 }),
    members: ["a"],
  },
  {
    name: "Trait LessThan: a non-number is not less",
    events: (T) => [
      identify("a", { n: 10 }, T - HOUR),
      identify("b", { n: 5.5 }, T - HOUR),
      identify("c", { n: "1" }, T - HOUR),
      seen("d"),
    ],
    definition: trait("n", { type: "LessThan", value: 10 }),
    members: ["b"],
  },
  {
    name: "Trait GreaterThan: strictly greater, numbers only",
    events: (T) => [
      identify("a", { n: 10 }, T - HOUR),
      identify("b", { n: 10.5 }, T - HOUR),
      identify("c", { n: "20" }, T - HOUR),
      seen("d"),
    ],
    definition: trait("n", { type: "GreaterThan", value: 10 }),
    members: ["b"],
  },
  {
    name: "Trait LessThanOrEqual: the value itself included, a non-number is not",
    events: (T) => [identify("a", { n: 10 }, T - HOUR), identify("b", { n: 11 }, T - HOUR), identify("c", { n: "1" }, T - HOUR), seen("d")],
    definition: trait("n", { type: "LessThanOrEqual", value: 10 }),
    members: ["a"],
  },
  {
    name: "Trait dot path into nested objects",
    events: (T) => [identify("a", { address: { city: "Paris" } }, T - HOUR), identify("b", { address: "Paris" }, T - HOUR)],
    definition: trait("address.city", { type: "Equals", value: "Paris" }),
    members: ["a"],
  },
  {
    name: "Trait dot path into arrays by index",
    events: (T) => [identify("a", { items: [{ sku: "x" }, { sku: "y" }] }, T - HOUR), identify("b", { items: [{ sku: "y" }] }, T - HOUR)],
    definition: trait("items.1.sku", { type: "Equals", value: "y" }),
    members: ["a"],
  },
  {
    name: "Trait Within: ISO dates, epoch seconds and milliseconds; windows open and close as time passes",
    events: (T) => [
      identify("iso", { at: new Date(T - HOUR).toISOString() }, T - HOUR),
      identify("sec", { at: Math.floor((T - 2 * DAY) / 1000) }, T - HOUR),
      identify("ms", { at: T - 10 * 60_000 }, T - HOUR),
      identify("junk", { at: "yesterday" }, T - HOUR),
      identify("future", { at: new Date(T + HOUR).toISOString() }, T - HOUR),
    ],
    definition: trait("at", { type: "Within", windowSeconds: 86_400 }),
    members: ["iso", "ms"],
    later: [
      { advance: HOUR + SECOND, members: ["future", "iso", "ms"] },
      { advance: 23 * HOUR, members: ["future"] },
      { advance: 2 * HOUR, members: [] },
    ],
  },
  {
    name: "Trait AbsoluteTimestamp after / before a fixed instant",
    events: (T) => [
      identify("a", { signup: new Date(T - 2 * HOUR).toISOString() }, T - HOUR),
      identify("b", { signup: new Date(T - 3 * DAY).toISOString() }, T - HOUR),
      identify("c", { signup: Math.floor((T - HOUR) / 1000) }, T - HOUR),
      identify("d", { signup: "soon" }, T - HOUR),
    ],
    definition: trait("signup", { type: "AbsoluteTimestamp", absoluteTimestamp: T - DAY, direction: "after" }),
    members: ["a", "c"],
  },
  {
    name: "Trait AbsoluteTimestamp before",
    events: (T) => [
      identify("a", { signup: new Date(T - 2 * HOUR).toISOString() }, T - HOUR),
      identify("b", { signup: T - 3 * DAY }, T - HOUR),
      identify("dateOnly", { signup: "2020-01-02" }, T - HOUR),
      identify("offset", { signup: "2020-01-02T10:00:00+02:00" }, T - HOUR),
    ],
    definition: trait("signup", { type: "AbsoluteTimestamp", absoluteTimestamp: T - DAY, direction: "before" }),
    members: ["b", "dateOnly", "offset"],
  },
  {
    name: "Trait HasBeen GTE: held for the window, repeats don't restart it, a change does",
    events: (T) => [
      identify("a", { plan: "pro" }, T - 2 * DAY),
      identify("a", { plan: "pro" }, T - HOUR),
      identify("b", { plan: "pro" }, T - 2 * HOUR),
      identify("c", { plan: "pro" }, T - 3 * DAY),
      identify("c", { plan: "free" }, T - 2 * DAY),
      identify("c", { plan: "pro" }, T - 3 * HOUR),
      identify("d", { plan: "free" }, T - 3 * DAY),
    ],
    definition: trait("plan", { type: "HasBeen", comparator: "GTE", value: "pro", windowSeconds: 86_400 }),
    members: ["a"],
    later: [
      { advance: 21 * HOUR + SECOND, members: ["a", "c"] },
      { advance: HOUR, members: ["a", "b", "c"] },
    ],
  },
  {
    name: "Trait HasBeen LT: newly equal, until the window passes",
    events: (T) => [
      identify("a", { plan: "pro" }, T - 2 * DAY),
      identify("b", { plan: "pro" }, T - 2 * HOUR),
      identify("d", { plan: "free" }, T - HOUR),
    ],
    definition: trait("plan", { type: "HasBeen", comparator: "LT", value: "pro", windowSeconds: 86_400 }),
    members: ["b"],
    later: [{ advance: 22 * HOUR + SECOND, members: [] }],
  },
  {
    name: "Performed ≥ 2 within 7 days with a property condition; events leave the window",
    events: (T) => [
      track({ userId: "a" }, "Bought", T - DAY, { amount: 50 }),
      track({ userId: "a" }, "Bought", T - 6 * DAY, { amount: 20 }),
      track({ userId: "b" }, "Bought", T - DAY, { amount: 50 }),
      track({ userId: "c" }, "Bought", T - DAY, { amount: 50 }),
      track({ userId: "c" }, "Bought", T - 8 * DAY, { amount: 50 }),
      track({ userId: "d" }, "Bought", T - DAY, { amount: 5 }),
      track({ userId: "d" }, "Bought", T - 2 * DAY, { amount: 5 }),
      track({ userId: "e" }, "Viewed", T - DAY, { amount: 50 }),
      track({ userId: "e" }, "Viewed", T - DAY, { amount: 50 }),
    ],
    definition: single({
      type: "Performed",
      event: "Bought",
      times: 2,
      timesOperator: ">=",
      withinSeconds: 7 * 86_400,
      properties: [{ path: "amount", operator: { type: "GreaterThanOrEqual", value: 10 } }],
    } as never),
    members: ["a"],
    later: [{ advance: DAY + SECOND, members: [] }],
  },
  {
    name: "Performed = 0: users who never did it",
    events: (T) => [track({ userId: "a" }, "Bought", T - DAY), seen("b")],
    definition: single({ type: "Performed", event: "Bought", times: 0, timesOperator: "=" } as never),
    members: ["b"],
  },
  {
    name: "Performed < 2 counts each messageId once (a replay is not a second event)",
    events: (T) => {
      const once = track({ userId: "a" }, "Bought", T - DAY);
      return [once, { ...once }, track({ userId: "b" }, "Bought", T - DAY), track({ userId: "b" }, "Bought", T - 2 * DAY)];
    },
    definition: single({ type: "Performed", event: "Bought", times: 2, timesOperator: "<" } as never),
    members: ["a"],
  },
  {
    name: "Performed by event time: a back-dated event is outside the window",
    events: (T) => [track({ userId: "a" }, "Bought", T - 10 * DAY), track({ userId: "b" }, "Bought", T - HOUR)],
    definition: single({ type: "Performed", event: "Bought", times: 1, timesOperator: ">=", withinSeconds: 7 * 86_400 } as never),
    members: ["b"],
  },
  {
    name: "Performed counts an anonymousId's events for the user it is linked to, also those sent before the link",
    events: (T) => [
      track({ anonymousId: "anon-1" }, "Bought", T - 2 * HOUR),
      track({ anonymousId: "anon-1" }, "Bought", T - HOUR),
      identify("u1", { plan: "pro" }, T - 30 * 60_000, { anonymousId: "anon-1" }),
      track({ anonymousId: "anon-2" }, "Bought", T - HOUR),
      track({ anonymousId: "anon-2" }, "Bought", T - HOUR),
    ],
    definition: single({ type: "Performed", event: "Bought", times: 2, timesOperator: ">=" } as never),
    members: ["anon-2", "u1"],
  },
  {
    name: "LastPerformed: the latest matching event must have the properties",
    events: (T) => [
      track({ userId: "a" }, "Plan Changed", T - 2 * HOUR, { plan: "pro", source: "web" }),
      track({ userId: "a" }, "Plan Changed", T - HOUR, { plan: "free", source: "web" }),
      track({ userId: "b" }, "Plan Changed", T - 2 * HOUR, { plan: "free", source: "web" }),
      track({ userId: "b" }, "Plan Changed", T - HOUR, { plan: "pro", source: "web" }),
      track({ userId: "c" }, "Plan Changed", T - 2 * HOUR, { plan: "pro", source: "web" }),
      track({ userId: "c" }, "Plan Changed", T - HOUR, { plan: "free", source: "app" }),
      seen("d"),
    ],
    definition: single({
      type: "LastPerformed",
      event: "Plan Changed",
      whereProperties: [{ path: "source", operator: { type: "Equals", value: "web" } }],
      hasProperties: [{ path: "plan", operator: { type: "Equals", value: "pro" } }],
    } as never),
    members: ["b", "c"],
  },
  {
    name: "LastPerformed: of events at the same instant, the one with the greatest messageId (in byte order) is the latest",
    events: (T) => [
      // Byte order puts "m-B" before "m-a", and both after "m-9".
      track({ userId: "a" }, "Plan Changed", T - HOUR, { plan: "free" }, { messageId: "m-a" }),
      track({ userId: "a" }, "Plan Changed", T - HOUR, { plan: "pro" }, { messageId: "m-B" }),
      track({ userId: "b" }, "Plan Changed", T - HOUR, { plan: "pro" }, { messageId: "m-b" }),
      track({ userId: "b" }, "Plan Changed", T - HOUR, { plan: "free" }, { messageId: "m-9" }),
      seen("c"),
    ],
    definition: single({
      type: "LastPerformed",
      event: "Plan Changed",
      hasProperties: [{ path: "plan", operator: { type: "Equals", value: "pro" } }],
    } as never),
    members: ["b"],
  },
  {
    name: "And / Or / Not / Everyone",
    events: (T) => [
      identify("a", { plan: "pro", country: "FR" }, T - HOUR),
      identify("b", { plan: "pro", country: "DE" }, T - HOUR),
      identify("c", { plan: "free", country: "FR" }, T - HOUR),
      seen("d"),
    ],
    definition: {
      entryNode: { type: "Or", id: "or", children: ["and", "none"] },
      nodes: [
        { type: "And", id: "and", children: ["pro", "notFr"] },
        { type: "Trait", id: "pro", path: "plan", operator: { type: "Equals", value: "pro" } },
        { type: "Not", id: "notFr", child: "fr" },
        { type: "Trait", id: "fr", path: "country", operator: { type: "Equals", value: "FR" } },
        { type: "And", id: "none", children: ["everyone", "noPlan"] },
        { type: "Everyone", id: "everyone" },
        { type: "Trait", id: "noPlan", path: "plan", operator: { type: "NotExists" } },
      ],
    },
    members: ["b", "d"],
  },
  {
    name: "Everyone: every known user, anonymous visitors included",
    events: (T) => [identify("a", {}, T - HOUR), track({ anonymousId: "v" }, "Seen", T - HOUR)],
    definition: single({ type: "Everyone" } as never),
    members: ["a", "v"],
  },
];

describe("segment engine: node types and operators", () => {
  for (const c of cases) {
    it(c.name, async () => {
      clock.now = T;
      const w = await segmentWorld(t);
      await w.send(c.events(T));
      const id = await w.segment(c.definition);
      await w.settle();
      expect(await w.members(id)).toEqual([...c.members].sort());
      for (const step of c.later ?? []) {
        clock.advance(step.advance);
        await w.settle();
        expect(await w.members(id), `after +${(clock.now - T) / HOUR} h`).toEqual([...step.members].sort());
      }
    });
  }
});

describe("segment engine: assignments, hand-set members, buckets", () => {
  it("SubscriptionGroup: OptIn needs a subscribe; OptOut holds until an unsubscribe", async () => {
    clock.now = T;
    const w = await segmentWorld(t);
    await w.send(["a", "b", "c"].map(seen));
    const optIn = (await w.admin("PUT", "/api/admin/subscription-groups", { name: "news", channel: "Email", type: "OptIn" })).id;
    const optOut = (await w.admin("PUT", "/api/admin/subscription-groups", { name: "tips", channel: "Email", type: "OptOut" })).id;
    const inSeg = await w.segment(single({ type: "SubscriptionGroup", subscriptionGroupId: optIn } as never));
    const outSeg = await w.segment(single({ type: "SubscriptionGroup", subscriptionGroupId: optOut } as never));
    await w.settle();
    expect(await w.members(inSeg)).toEqual([]);
    expect(await w.members(outSeg)).toEqual(["a", "b", "c"]);
    await w.admin("PUT", `/api/admin/subscription-groups/${optIn}/assignments`, { subscribe: ["a"], unsubscribe: ["b"] });
    await w.admin("PUT", `/api/admin/subscription-groups/${optOut}/assignments`, { unsubscribe: ["c"], subscribe: ["a"] });
    await w.settle();
    expect(await w.members(inSeg)).toEqual(["a"]);
    expect(await w.members(outSeg)).toEqual(["a", "b"]);
  });

  it("Manual: hand-set members enter and leave, each change recorded", async () => {
    clock.now = T;
    const w = await segmentWorld(t);
    const id = await w.segment(undefined);
    await w.admin("PUT", `/api/admin/segments/${id}/members`, { add: ["a", "b"] });
    await w.settle();
    expect(await w.members(id)).toEqual(["a", "b"]);
    await w.admin("PUT", `/api/admin/segments/${id}/members`, { remove: ["a"] });
    await w.settle();
    expect(await w.members(id)).toEqual(["b"]);
    const changes = await history(w.ws.id, id);
    expect(changes).toEqual([
      ["a", true],
      ["b", true],
      ["a", false],
    ]);
  });

  it("RandomBucket: md5 of segment and user below the percent, stable across recomputes", async () => {
    clock.now = T;
    const w = await segmentWorld(t);
    const users = Array.from({ length: 40 }, (_, i) => `u${i}`);
    await w.send(users.map(seen));
    const id = await w.segment(single({ type: "RandomBucket", percent: 0.5 } as never));
    await w.settle();
    const expected = users.filter(
      (u) => Number.parseInt(createHash("md5").update(`${id}:${u}`).digest("hex").slice(0, 8), 16) / 2 ** 32 < 0.5,
    );
    expect(expected.length).toBeGreaterThan(5);
    expect(expected.length).toBeLessThan(35);
    expect(await w.members(id)).toEqual(expected.sort());
    await t.ctx.segments.recomputeAll(w.ws.id);
    expect(await w.members(id)).toEqual(expected.sort());
  });
});

describe("segment engine: keeping membership current", () => {
  it("reacts to new events without a settle call, through the worker, within seconds", async () => {
    clock.now = T;
    const w = await segmentWorld(t);
    const id = await w.segment(trait("plan", { type: "Equals", value: "pro" }));
    await w.settle();
    await w.send([identify("late", { plan: "pro" }, T - HOUR)]);
    const deadline = Date.now() + 10_000;
    while (!(await w.members(id)).includes("late") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(await w.members(id)).toEqual(["late"]);
  });

  it("incremental changes: a trait changes back and forth, enter and exit recorded with their times; memberCount follows", async () => {
    clock.now = T;
    const w = await segmentWorld(t);
    const id = await w.segment(trait("plan", { type: "Equals", value: "pro" }));
    await w.send([identify("a", { plan: "pro" }, T - 3 * HOUR), identify("b", { plan: "pro" }, T - 3 * HOUR)]);
    await w.settle();
    const entered = await w.entered(id);
    expect(entered.get("a")).toBe(T);
    clock.advance(SECOND);
    await w.send([identify("a", { plan: "free" }, T - 2 * HOUR)]);
    await w.settle();
    clock.advance(SECOND);
    await w.send([identify("a", { plan: "pro" }, T - HOUR)]);
    await w.settle();
    expect((await w.entered(id)).get("a")).toBe(T + 2 * SECOND);
    expect(await history(w.ws.id, id)).toEqual([
      ["a", true],
      ["b", true],
      ["a", false],
      ["a", true],
    ]);
    const segment = await w.admin("GET", `/api/admin/segments/${id}`);
    expect(segment.memberCount).toBe(2);
    expect(segment.lastRecomputed).toEqual(expect.any(Number));
    // An older identify does not override the newer trait value.
    await w.send([identify("a", { plan: "free" }, T - 5 * HOUR)]);
    await w.settle();
    expect(await w.members(id)).toEqual(["a", "b"]);
  });

  it("a changed definition recomputes the segment and moves lastRecomputed", async () => {
    clock.now = T;
    const w = await segmentWorld(t);
    await w.send([identify("a", { plan: "pro" }, T - HOUR), identify("b", { plan: "free" }, T - HOUR)]);
    const name = "plan";
    const id = await w.segment(trait("plan", { type: "Equals", value: "pro" }), name);
    await w.settle();
    const first = (await w.admin("GET", `/api/admin/segments/${id}`)).lastRecomputed;
    await w.segment(trait("plan", { type: "Equals", value: "free" }), name);
    await w.settle();
    expect(await w.members(id)).toEqual(["b"]);
    const again = await w.admin("GET", `/api/admin/segments/${id}`);
    expect(again.lastRecomputed).toBeGreaterThanOrEqual(first);
    expect(again.lastRecomputed).toBeGreaterThanOrEqual(again.definitionUpdatedAt);
    expect(again.memberCount).toBe(1);
  });

  it("an identity link moves the anonymous visitor's memberships to the user", async () => {
    clock.now = T;
    const w = await segmentWorld(t);
    const id = await w.segment(single({ type: "Performed", event: "Bought", times: 1, timesOperator: ">=" } as never));
    await w.send([track({ anonymousId: "anon" }, "Bought", T - HOUR)]);
    await w.settle();
    expect(await w.members(id)).toEqual(["anon"]);
    await w.send([identify("user", {}, T, { anonymousId: "anon" })]);
    await w.settle();
    expect(await w.members(id)).toEqual(["user"]);
  });

  it("users: the user's segments, the segment filter, and DELETE erasing everything", async () => {
    clock.now = T;
    const w = await segmentWorld(t);
    const pro = await w.segment(trait("plan", { type: "Equals", value: "pro" }), "pro");
    const all = await w.segment(single({ type: "Everyone" } as never), "all");
    await w.send([identify("a", { plan: "pro" }, T - HOUR, { anonymousId: "anon-a" }), identify("b", { plan: "free" }, T - HOUR)]);
    await w.settle();
    const user = await w.admin("GET", "/api/admin/users/anon-a");
    expect(user.segments.map((s: { name: string }) => s.name)).toEqual(["all", "pro"]);
    const listed = await w.admin("GET", `/api/admin/users?segmentId=${pro}`);
    expect(listed.items.map((u: { userId: string }) => u.userId)).toEqual(["a"]);
    expect((await w.admin("GET", "/api/admin/users?limit=1")).nextCursor).toEqual(expect.any(String));
    await w.admin("DELETE", "/api/admin/users/anon-a");
    expect(await w.members(pro)).toEqual([]);
    expect(await w.members(all)).toEqual(["b"]);
    expect((await w.admin("GET", `/api/admin/segments/${all}`)).memberCount).toBe(1);
    expect((await w.admin("GET", "/api/admin/events?userId=a")).items).toEqual([]);
    expect((await w.admin("GET", "/api/admin/events?userId=anon-a")).items).toEqual([]);
    const db = new pg.Client({ connectionString: t.databaseUrl });
    await db.connect();
    try {
      const { rows } = await db.query(
        `SELECT (SELECT count(*) FROM events WHERE workspace_id = $1 AND identity_id IN ('a', 'anon-a'))::int AS events,
                (SELECT count(*) FROM profile_aliases WHERE workspace_id = $1 AND profile_id = 'a')::int AS links,
                (SELECT count(*) FROM segment_membership_changes WHERE workspace_id = $1 AND profile_id = 'a')::int AS history`,
        [w.ws.id],
      );
      expect(rows[0]).toEqual({ events: 0, links: 0, history: 0 });
    } finally {
      await db.end();
    }
  });
});

describe("ad-hoc evaluation", () => {
  it("the members of an inline definition now, without storing a segment", async () => {
    clock.now = T;
    const w = await segmentWorld(t);
    await w.send([
      identify("a", { plan: "pro" }, T - HOUR),
      identify("b", { plan: "free" }, T - HOUR),
      track({ anonymousId: "v" }, "Seen", T - HOUR),
    ]);
    const query = await t.ctx.segments.membersOf(w.ws.id, trait("plan", { type: "NotEquals", value: "free" }), "seed");
    const { rows } = await t.ctx.db.pool.query<{ profile_id: string }>(`SELECT profile_id FROM (${query.text}) m ORDER BY 1`, query.values);
    expect(rows.map((r) => r.profile_id)).toEqual(["a"]);
    const everyone = await t.ctx.segments.membersOf(w.ws.id, single({ type: "Everyone" } as never), "seed");
    expect((await t.ctx.db.pool.query(everyone.text, everyone.values)).rowCount).toBe(3);
  });
});

describe("segment dependencies", () => {
  it("index by event names and trait keys; `*` when a user with no data could match", () => {
    expect(segmentDependencies(trait("plan.tier", { type: "Equals", value: "pro" }))).toEqual(["t:plan"]);
    expect(segmentDependencies(single({ type: "Performed", event: "Viewed", times: 1, timesOperator: ">=" } as never))).toEqual([
      "e:Viewed",
    ]);
    expect(segmentDependencies(single({ type: "Performed", event: "Viewed", times: 1, timesOperator: "<" } as never))).toEqual([
      "*",
      "e:Viewed",
    ]);
    expect(segmentDependencies(trait("plan", { type: "NotExists" }))).toEqual(["*", "t:plan"]);
    expect(segmentDependencies(single({ type: "Everyone" } as never))).toEqual(["*"]);
    expect(
      segmentDependencies({
        entryNode: { type: "Not", id: "n", child: "p" },
        nodes: [{ type: "Trait", id: "p", path: "plan", operator: { type: "Equals", value: "pro" } }],
      }),
    ).toEqual(["*", "t:plan"]);
  });
});

async function history(workspaceId: string, segmentId: string): Promise<[string, boolean][]> {
  const db = new pg.Client({ connectionString: t.databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query<{ profile_id: string; entered: boolean }>(
      "SELECT profile_id, entered FROM segment_membership_changes WHERE workspace_id = $1 AND segment_id = $2 ORDER BY id",
      [workspaceId, segmentId],
    );
    return rows.map((r) => [r.profile_id, r.entered]);
  } finally {
    await db.end();
  }
}
