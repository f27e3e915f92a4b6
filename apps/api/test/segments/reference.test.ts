// Hand-checked cases for the reference evaluator itself (reference.ts), one or more per node and
// operator of docs/segments.md, so the differential test compares the engine with something known.
import type { SegmentDefinition, SegmentNode } from "@tidings/schema";
import { describe, expect, it } from "vitest";
import { parseDate, readPath, type RefEvent, type RefWorld, referenceMembers } from "./reference.ts";

const NOW = Date.UTC(2024, 5, 15, 12, 0, 0);
const S = 1000;
const H = 3600 * S;
const D = 24 * H;

let n = 0;
const mid = () => `m-${String(n++).padStart(6, "0")}`;
const identify = (identityId: string, time: number, traits: Record<string, unknown>): RefEvent => ({
  messageId: mid(),
  type: "identify",
  identityId,
  time,
  traits,
});
const track = (identityId: string, event: string, time: number, properties?: Record<string, unknown>, messageId = mid()): RefEvent => ({
  messageId,
  type: "track",
  identityId,
  event,
  time,
  ...(properties ? { properties } : {}),
});

const world = (events: RefEvent[], extra: Partial<RefWorld> = {}): RefWorld => ({
  events,
  links: {},
  subscriptionGroups: {},
  assignments: {},
  manual: {},
  ...extra,
});
const def = (entryNode: SegmentNode, ...nodes: SegmentNode[]) => ({ entryNode, nodes }) as SegmentDefinition;
const trait = (path: string, operator: unknown) => def({ type: "Trait", id: "t", path, operator } as SegmentNode);
const members = (w: RefWorld, d: SegmentDefinition, now = NOW, segmentId = "seg-1") => [...referenceMembers(w, d, segmentId, now)].sort();

describe("paths and values", () => {
  it("reads object keys and array elements; missing steps and null are absent", () => {
    const v = { items: [{ sku: "a" }, { sku: "b" }], n: null, o: { "0": "zero" } };
    expect(readPath(v, "items.1.sku")).toBe("b");
    expect(readPath(v, "items.0.sku")).toBe("a");
    expect(typeof readPath(v, "items.2.sku")).toBe("symbol");
    expect(typeof readPath(v, "items.x")).toBe("symbol");
    expect(typeof readPath(v, "items.-1")).toBe("symbol");
    expect(typeof readPath(v, "n")).toBe("symbol");
    expect(typeof readPath(v, "n.x")).toBe("symbol");
    expect(readPath(v, "o.0")).toBe("zero");
    expect(typeof readPath(v, "items.1.sku.x")).toBe("symbol");
  });

  it("items.1.sku as a trait path", () => {
    const w = world([
      identify("u1", NOW - D, { items: [{ sku: "a" }, { sku: "b" }] }),
      identify("u2", NOW - D, { items: [{ sku: "b" }] }),
      identify("u3", NOW - D, { items: { "1": { sku: "b" } } }),
    ]);
    expect(members(w, trait("items.1.sku", { type: "Equals", value: "b" }))).toEqual(["u1", "u3"]);
    expect(members(w, trait("items.1.sku", { type: "NotExists" }))).toEqual(["u2"]);
  });

  it("parses ISO dates (UTC without a zone, offsets) and epoch seconds vs milliseconds", () => {
    expect(parseDate("2024-06-15")).toBe(Date.UTC(2024, 5, 15));
    expect(parseDate("2024-06-15T10:30")).toBe(Date.UTC(2024, 5, 15, 10, 30));
    expect(parseDate("2024-06-15T10:30:05")).toBe(Date.UTC(2024, 5, 15, 10, 30, 5));
    expect(parseDate("2024-06-15T10:30:05.250Z")).toBe(Date.UTC(2024, 5, 15, 10, 30, 5, 250));
    expect(parseDate("2024-06-15T10:30:05+02:00")).toBe(Date.UTC(2024, 5, 15, 8, 30, 5));
    expect(parseDate("2024-06-15T10:30-01:30")).toBe(Date.UTC(2024, 5, 15, 12, 0));
    expect(parseDate(1_718_452_800)).toBe(1_718_452_800_000);
    expect(parseDate(99_999_999_999)).toBe(99_999_999_999_000);
    expect(parseDate(100_000_000_000)).toBe(100_000_000_000);
    expect(parseDate(1_718_452_800_000)).toBe(1_718_452_800_000);
    expect(parseDate(-5)).toBe(-5000);
    for (const bad of [
      "2024-06-15 10:30",
      "15/06/2024",
      "2024-6-15",
      "2024-02-30",
      "2024-06-15T25:00",
      "yesterday",
      "",
      true,
      null,
      {},
      [],
    ]) {
      expect(parseDate(bad), JSON.stringify(bad)).toBeNull();
    }
  });
});

describe("trait folding", () => {
  it("per top-level key, the later event time wins; equal times → the later-processed one", () => {
    const w = world([
      identify("u1", NOW - 1 * H, { plan: "late", seats: 1 }),
      identify("u1", NOW - 2 * H, { plan: "early", region: "eu" }),
      identify("u2", NOW - 1 * H, { plan: "first" }),
      identify("u2", NOW - 1 * H, { plan: "second" }),
    ]);
    expect(members(w, trait("plan", { type: "Equals", value: "late" }))).toEqual(["u1"]);
    expect(members(w, trait("region", { type: "Equals", value: "eu" }))).toEqual(["u1"]);
    expect(members(w, trait("plan", { type: "Equals", value: "second" }))).toEqual(["u2"]);
  });

  it("a later identify replaces a whole top-level object", () => {
    const w = world([
      identify("u1", NOW - 2 * H, { address: { city: "Paris", country: "FR" } }),
      identify("u1", NOW - H, { address: { city: "Lyon" } }),
    ]);
    expect(members(w, trait("address.country", { type: "Exists" }))).toEqual([]);
    expect(members(w, trait("address.city", { type: "Equals", value: "Lyon" }))).toEqual(["u1"]);
  });
});

describe("value operators", () => {
  const w = world([
    identify("str1", NOW, { v: "1" }),
    identify("num1", NOW, { v: 1 }),
    identify("num5", NOW, { v: 5 }),
    identify("str5", NOW, { v: "5" }),
    identify("true", NOW, { v: true }),
    identify("strtrue", NOW, { v: "true" }),
    identify("null", NOW, { v: null }),
    identify("obj", NOW, { v: { a: 1 } }),
    identify("arr", NOW, { v: [1] }),
    identify("none", NOW, { other: 1 }),
  ]);

  it("Equals compares by type and value; objects and arrays equal nothing", () => {
    expect(members(w, trait("v", { type: "Equals", value: 1 }))).toEqual(["num1"]);
    expect(members(w, trait("v", { type: "Equals", value: "1" }))).toEqual(["str1"]);
    expect(members(w, trait("v", { type: "Equals", value: true }))).toEqual(["true"]);
    expect(members(w, trait("v", { type: "Equals", value: "true" }))).toEqual(["strtrue"]);
  });

  it("NotEquals needs a present value: missing and null are false, objects and arrays true", () => {
    expect(members(w, trait("v", { type: "NotEquals", value: 1 }))).toEqual(["arr", "num5", "obj", "str1", "str5", "strtrue", "true"]);
    expect(
      members(w, def({ type: "Not", id: "n", child: "e" }, { type: "Trait", id: "e", path: "v", operator: { type: "Equals", value: 1 } })),
    ).toEqual(["arr", "none", "null", "num5", "obj", "str1", "str5", "strtrue", "true"]);
  });

  it("Exists / NotExists: null is absent", () => {
    expect(members(w, trait("v", { type: "NotExists" }))).toEqual(["none", "null"]);
    expect(members(w, trait("v", { type: "Exists" }))).toHaveLength(8);
  });

  it('GreaterThanOrEqual / LessThan take only numbers: "5" is false for both', () => {
    expect(members(w, trait("v", { type: "GreaterThanOrEqual", value: 5 }))).toEqual(["num5"]);
    expect(members(w, trait("v", { type: "LessThan", value: 5 }))).toEqual(["num1"]);
    expect(members(w, trait("v", { type: "GreaterThanOrEqual", value: 0 }))).toEqual(["num1", "num5"]);
  });

  it("Within: [now − w, now], inclusive, future dates out; ISO without zone is UTC; epoch s vs ms", () => {
    const iso = (ms: number) => new Date(ms).toISOString();
    const w2 = world([
      identify("edge", NOW, { d: NOW - H }), // ms, exactly at now − w
      identify("now", NOW, { d: NOW }),
      identify("future", NOW, { d: NOW + 1 }),
      identify("outside", NOW, { d: NOW - H - 1 }),
      identify("seconds", NOW, { d: (NOW - 30 * 60 * S) / 1000 }),
      identify("isoZ", NOW, { d: iso(NOW - 10 * 60 * S) }),
      // 11:30 without zone is 11:30 UTC (30 min before NOW); read as +02:00 it would be 09:30.
      identify("isoNoZone", NOW, { d: "2024-06-15T11:30" }),
      identify("isoOffset", NOW, { d: "2024-06-15T13:30+02:00" }), // 11:30 UTC
      identify("isoOffsetOut", NOW, { d: "2024-06-15T11:30+02:00" }), // 09:30 UTC
      identify("dateOnly", NOW, { d: "2024-06-15" }), // 00:00 UTC, 12 h ago
      identify("string", NOW, { d: "soon" }),
      identify("numstr", NOW, { d: String(NOW) }),
    ]);
    expect(members(w2, trait("d", { type: "Within", windowSeconds: 3600 }))).toEqual([
      "edge",
      "isoNoZone",
      "isoOffset",
      "isoZ",
      "now",
      "seconds",
    ]);
    expect(members(w2, trait("d", { type: "Within", windowSeconds: 13 * 3600 }))).toContain("dateOnly");
  });

  it("AbsoluteTimestamp is strict in both directions", () => {
    const T = Date.UTC(2024, 0, 1);
    const w2 = world([
      identify("at", NOW, { d: T }),
      identify("atSeconds", NOW, { d: T / 1000 }),
      identify("after", NOW, { d: T + 1 }),
      identify("before", NOW, { d: "2023-12-31T23:59:59Z" }),
      identify("afterIso", NOW, { d: "2024-01-01T00:00:00.001" }),
      identify("bad", NOW, { d: "2024-01-01T00:00:00 " }),
    ]);
    expect(members(w2, trait("d", { type: "AbsoluteTimestamp", absoluteTimestamp: T, direction: "after" }))).toEqual(["after", "afterIso"]);
    expect(members(w2, trait("d", { type: "AbsoluteTimestamp", absoluteTimestamp: T, direction: "before" }))).toEqual(["before"]);
  });
});

describe("HasBeen", () => {
  const hb = (comparator: "GTE" | "LT", windowSeconds: number, value: unknown = "pro", path = "plan") =>
    trait(path, { type: "HasBeen", comparator, value, windowSeconds });

  it("since = earliest identify setting the value after the last one setting anything else (event-time order)", () => {
    const w = world([
      // Sent out of order: times are what count.
      identify("u1", NOW - 3 * H, { plan: "pro" }),
      identify("u1", NOW - 10 * H, { plan: "pro" }),
      identify("u1", NOW - 5 * H, { plan: "free" }),
      identify("u1", NOW - 4 * H, { plan: "pro" }), // s = now − 4 h
      identify("u1", NOW - 2 * H, { other: 1 }), // does not carry plan: not a setting
    ]);
    expect(members(w, hb("GTE", 4 * 3600))).toEqual(["u1"]);
    expect(members(w, hb("GTE", 4 * 3600 + 1))).toEqual([]);
    expect(members(w, hb("LT", 4 * 3600 + 1))).toEqual(["u1"]);
    expect(members(w, hb("LT", 4 * 3600))).toEqual([]);
    expect(members(w, hb("LT", 100 * 3600, "free"))).toEqual([]); // not equal now
  });

  it("a nested path: only identifies carrying the top-level key set it; a null or missing value sets it to something else", () => {
    const w = world([
      identify("u1", NOW - 6 * H, { acct: { plan: "pro" } }),
      identify("u1", NOW - 5 * H, { acct: null }),
      identify("u1", NOW - 4 * H, { acct: { plan: "pro", seats: 2 } }), // s
      identify("u1", NOW - 3 * H, { acct: { plan: "pro" } }),
      identify("u1", NOW - 2 * H, { other: { plan: "free" } }),
      identify("u2", NOW - 6 * H, { acct: { plan: "pro" } }),
      identify("u2", NOW - 5 * H, { acct: { seats: 1 } }),
    ]);
    expect(members(w, hb("GTE", 4 * 3600, "pro", "acct.plan"))).toEqual(["u1"]);
    expect(members(w, hb("GTE", 4 * 3600 + 1, "pro", "acct.plan"))).toEqual([]);
  });

  it('type-strict: 1 then "1" is a change', () => {
    const w = world([
      identify("u1", NOW - 5 * H, { n: 1 }),
      identify("u1", NOW - 4 * H, { n: "1" }),
      identify("u1", NOW - 3 * H, { n: 1 }),
    ]);
    expect(members(w, hb("GTE", 3 * 3600, 1, "n"))).toEqual(["u1"]);
    expect(members(w, hb("GTE", 3 * 3600 + 1, 1, "n"))).toEqual([]);
  });
});

describe("Performed", () => {
  const perf = (extra: Record<string, unknown>) =>
    def({ type: "Performed", id: "p", event: "Bought", times: 1, timesOperator: ">=", ...extra } as SegmentNode);

  it("counts distinct messageIds of track events (not page events, not other names)", () => {
    const w = world([
      track("u1", "Bought", NOW - H, {}, "dup"),
      track("u1", "Bought", NOW - H, {}, "dup"),
      track("u1", "Viewed", NOW - H),
      { messageId: mid(), type: "page", identityId: "u2", event: "Bought", time: NOW - H },
      track("u3", "Bought", NOW - H),
      track("u3", "Bought", NOW - 2 * H),
    ]);
    expect(members(w, perf({ times: 2 }))).toEqual(["u3"]);
    expect(members(w, perf({ times: 1, timesOperator: "=" }))).toEqual(["u1"]);
    expect(members(w, perf({ times: 1, timesOperator: "<" }))).toEqual(["u2"]);
    expect(members(w, perf({ times: 0, timesOperator: "=" }))).toEqual(["u2"]);
  });

  it("withinSeconds counts events with time ≥ now − w (inclusive), future events included", () => {
    const w = world([track("edge", "Bought", NOW - H), track("out", "Bought", NOW - H - 1), track("future", "Bought", NOW + D)]);
    expect(members(w, perf({ withinSeconds: 3600 }))).toEqual(["edge", "future"]);
  });

  it("property conditions must all hold", () => {
    const w = world([
      track("u1", "Bought", NOW - H, { price: 10, items: [{ sku: "a" }, { sku: "b" }] }),
      track("u2", "Bought", NOW - H, { price: "10", items: [{ sku: "b" }] }),
      track("u3", "Bought", NOW - H, { price: 20 }),
    ]);
    const conds = (...c: unknown[]) => perf({ properties: c });
    expect(members(w, conds({ path: "price", operator: { type: "GreaterThanOrEqual", value: 10 } }))).toEqual(["u1", "u3"]);
    expect(
      members(
        w,
        conds(
          { path: "price", operator: { type: "LessThan", value: 15 } },
          { path: "items.1.sku", operator: { type: "Equals", value: "b" } },
        ),
      ),
    ).toEqual(["u1"]);
    expect(members(w, conds({ path: "price", operator: { type: "NotEquals", value: 10 } }))).toEqual(["u2", "u3"]);
  });

  it("anonymous events count for the user they were later linked to", () => {
    const w = world(
      [
        track("anon-1", "Bought", NOW - 3 * H),
        track("anon-1", "Bought", NOW - 2 * H),
        { ...identify("alice", NOW - H, { email: "a@x" }) },
        track("alice", "Bought", NOW - H / 2),
        track("anon-2", "Bought", NOW - H),
      ],
      { links: { "anon-1": "alice" } },
    );
    expect(members(w, perf({ times: 3 }))).toEqual(["alice"]);
    expect(members(w, def({ type: "Everyone", id: "e" }))).toEqual(["alice", "anon-2"]);
  });
});

describe("LastPerformed", () => {
  const lp = (extra: Record<string, unknown>) => def({ type: "LastPerformed", id: "l", event: "Plan", ...extra } as SegmentNode);
  const has = (value: string) => [{ path: "plan", operator: { type: "Equals", value } }];

  it("the latest by event time, then messageId; false when there is none", () => {
    const w = world([
      track("u1", "Plan", NOW - H, { plan: "pro" }),
      track("u1", "Plan", NOW - 2 * H, { plan: "free" }), // sent later, happened earlier
      track("u2", "Plan", NOW - H, { plan: "free" }, "m-b"),
      track("u2", "Plan", NOW - H, { plan: "pro" }, "m-a"), // same time, smaller messageId
      track("u3", "Other", NOW - H, { plan: "pro" }),
    ]);
    expect(members(w, lp({ hasProperties: has("pro") }))).toEqual(["u1"]);
    expect(members(w, lp({ hasProperties: has("free") }))).toEqual(["u2"]);
    expect(members(w, lp({}))).toEqual(["u1", "u2"]);
  });

  it("whereProperties chooses the events considered before taking the latest", () => {
    const w = world([
      track("u1", "Plan", NOW - 2 * H, { plan: "pro", source: "web" }),
      track("u1", "Plan", NOW - H, { plan: "free", source: "app" }),
    ]);
    const where = [{ path: "source", operator: { type: "Equals", value: "web" } }];
    expect(members(w, lp({ whereProperties: where, hasProperties: has("pro") }))).toEqual(["u1"]);
    expect(members(w, lp({ hasProperties: has("pro") }))).toEqual([]);
    expect(members(w, lp({ whereProperties: [{ path: "source", operator: { type: "Equals", value: "tv" } }] }))).toEqual([]);
  });
});

describe("logic, groups, buckets, manual", () => {
  const w = world([identify("alice", NOW, { a: 1 }), identify("bob", NOW, { b: 1 }), track("carol", "X", NOW)], {
    subscriptionGroups: { gin: "OptIn", gout: "OptOut" },
    assignments: { gin: { alice: true, bob: false }, gout: { alice: false, carol: true } },
    manual: { "seg-1": ["bob", "carol"] },
  });

  it("And / Or / Not / Everyone", () => {
    const a: SegmentNode = { type: "Trait", id: "a", path: "a", operator: { type: "Exists" } };
    const b: SegmentNode = { type: "Trait", id: "b", path: "b", operator: { type: "Exists" } };
    expect(members(w, def({ type: "Or", id: "o", children: ["a", "b"] }, a, b))).toEqual(["alice", "bob"]);
    expect(members(w, def({ type: "And", id: "x", children: ["a", "b"] }, a, b))).toEqual([]);
    expect(members(w, def({ type: "Not", id: "n", child: "a" }, a))).toEqual(["bob", "carol"]);
    expect(members(w, def({ type: "Everyone", id: "e" }))).toEqual(["alice", "bob", "carol"]);
  });

  it("SubscriptionGroup: OptIn needs a subscription, OptOut only the absence of an unsubscription", () => {
    expect(members(w, def({ type: "SubscriptionGroup", id: "s", subscriptionGroupId: "gin" }))).toEqual(["alice"]);
    expect(members(w, def({ type: "SubscriptionGroup", id: "s", subscriptionGroupId: "gout" }))).toEqual(["bob", "carol"]);
  });

  it("RandomBucket: md5(segmentId:userId), first 8 hex digits / 2^32 < percent", () => {
    // md5("seg-1:alice") = 0bba0539… → 0.0458; md5("seg-1:bob") = 7a64d1a4… → 0.4781
    const rb = (percent: number) => def({ type: "RandomBucket", id: "r", percent });
    const two = world([identify("alice", NOW, {}), identify("bob", NOW, {})]);
    expect(members(two, rb(0.0458))).toEqual([]);
    expect(members(two, rb(0.0459))).toEqual(["alice"]);
    expect(members(two, rb(0.4781))).toEqual(["alice"]);
    expect(members(two, rb(0.4782))).toEqual(["alice", "bob"]);
    expect(members(two, rb(0))).toEqual([]);
    expect(members(two, rb(1))).toEqual(["alice", "bob"]);
  });

  it("Manual: the hand-set members of this segment", () => {
    expect(members(w, def({ type: "Manual", id: "m" }))).toEqual(["bob", "carol"]);
    expect(members(w, def({ type: "Manual", id: "m" }), NOW, "seg-2")).toEqual([]);
  });
});
