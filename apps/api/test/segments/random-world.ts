// Seeded random worlds for the differential segment test: users (known, anonymous, linked later),
// identify traits from small mixed-type pools, track events with properties, replays, subscription
// groups and random definition trees. Everything is drawn from one PRNG, so a seed reproduces a run.
import type { PropertyCondition, SegmentDefinition, SegmentNode, SegmentOperator } from "@tidings/schema";
import type { RefEvent, RefWorld } from "./reference.ts";

// --- PRNG ------------------------------------------------------------------------------------

/** mulberry32: small, fast, good enough for test data. */
export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0 || 0x9e3779b9;
  }
  next(): number {
    this.s = (this.s + 0x6d2b79f5) >>> 0;
    let t = this.s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** Integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(arr: readonly T[]): T {
    if (arr.length === 0) throw new Error("pick from empty array");
    return arr[Math.floor(this.next() * arr.length)]!;
  }
  weighted<T>(entries: readonly (readonly [T, number])[]): T {
    const total = entries.reduce((s, [, w]) => s + w, 0);
    let r = this.next() * total;
    for (const [v, w] of entries) {
      r -= w;
      if (r < 0) return v;
    }
    return entries[entries.length - 1]![0];
  }
  shuffle<T>(arr: T[]): T[] {
    for (let i = arr.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [arr[i], arr[j]] = [arr[j]!, arr[i]!];
    }
    return arr;
  }
  sample<T>(arr: readonly T[], n: number): T[] {
    return this.shuffle([...arr]).slice(0, n);
  }
  hex(n: number): string {
    let s = "";
    for (let i = 0; i < n; i++) s += "0123456789abcdef"[this.int(0, 15)];
    return s;
  }
  uuid(): string {
    const h = this.hex(32);
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${"89ab"[this.int(0, 3)]}${h.slice(17, 20)}-${h.slice(20, 32)}`;
  }
}

// --- Time ------------------------------------------------------------------------------------

export const SEC = 1000;
export const MIN = 60 * SEC;
export const HOUR = 60 * MIN;
export const DAY = 24 * HOUR;

/** Window lengths (s) used by operators and nodes; event times sit on a grid that hits their edges. */
export const WINDOWS = [60, 3600, 3601, 6 * 3600, 86400, 7 * 86400] as const;

const pad = (n: number, w = 2) => String(n).padStart(w, "0");

/** Date values of many formats around `now`: ISO (zones, none, date only), epoch s / ms, and non-dates. */
export function dateValue(rng: Rng, now: number): unknown {
  const offset = rng.pick([-10 * DAY, -DAY, -6 * HOUR, -HOUR - MIN, -HOUR, -59 * MIN, -MIN, 0, 30 * MIN, 2 * HOUR, 3 * DAY]);
  const t = now + offset;
  const d = new Date(t);
  const ymd = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
  const hm = `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}`;
  const kind = rng.weighted([
    ["isoZ", 1],
    ["isoMs", 1],
    ["noZone", 1.5],
    ["noZoneSec", 1],
    ["offset", 1],
    ["offsetIndia", 1],
    ["dateOnly", 1],
    ["epochS", 3],
    ["epochMs", 2],
    ["frac1", 0.5],
    ["numstr", 0.5],
    ["garbage", 0.5],
    ["space", 0.5],
  ] as const);
  switch (kind) {
    case "isoZ":
      return `${ymd}T${hm}:${pad(d.getUTCSeconds())}Z`;
    case "isoMs":
      return d.toISOString();
    case "noZone":
      return `${ymd}T${hm}`;
    case "noZoneSec":
      return `${ymd}T${hm}:${pad(d.getUTCSeconds())}`;
    case "offset": {
      // The same instant written at +02:00.
      const l = new Date(t + 2 * HOUR);
      return `${l.getUTCFullYear()}-${pad(l.getUTCMonth() + 1)}-${pad(l.getUTCDate())}T${pad(l.getUTCHours())}:${pad(l.getUTCMinutes())}:${pad(l.getUTCSeconds())}+02:00`;
    }
    case "offsetIndia": {
      const l = new Date(t - (5 * HOUR + 30 * MIN));
      return `${l.getUTCFullYear()}-${pad(l.getUTCMonth() + 1)}-${pad(l.getUTCDate())}T${pad(l.getUTCHours())}:${pad(l.getUTCMinutes())}-05:30`;
    }
    case "dateOnly":
      return ymd;
    case "epochS":
      return Math.floor(t / 1000);
    case "epochMs":
      return t;
    case "frac1":
      return `${ymd}T${hm}:${pad(d.getUTCSeconds())}.5Z`;
    case "numstr":
      return String(Math.floor(t / 1000));
    case "garbage":
      return rng.pick(["yesterday", "", "2024-13-01", "1/2/2024"]);
    default:
      return `${ymd} ${hm}`; // a space instead of T: not a date
  }
}

// --- Value pools -----------------------------------------------------------------------------

type Pool = (rng: Rng, now: number) => unknown;
const from =
  (...values: unknown[]): Pool =>
  (rng) =>
    structuredClone(rng.pick(values));

export const TRAIT_POOLS: Record<string, Pool> = {
  plan: from("free", "pro", "team", "Pro", null, "pro", "free"),
  age: from(17, 30, 45.5, "30", 0, -3, null),
  vip: from(true, false, "true", 1),
  score: from(0, 10, 99, "99", 10.5, "ten"),
  address: from({ country: "FR", city: "Paris" }, { country: "US" }, { city: "Lyon" }, null, "FR", { country: null }),
  items: from(
    [{ sku: "a" }, { sku: "b" }],
    [{ sku: "b" }],
    [],
    [
      { sku: "a", qty: 2 },
      { sku: "c", qty: 1 },
    ],
    { "1": { sku: "b" } },
  ),
  tags: from(["x", "y"], ["y"], "x", [null, "x"]),
  signup: dateValue,
  seen: dateValue,
  acct: (rng, now) =>
    rng.pick<() => unknown>([
      () => ({ plan: "pro", since: dateValue(rng, now) }),
      () => ({ plan: "free" }),
      () => ({ plan: "pro", seats: 3 }),
      () => null,
      () => ({ plan: rng.pick(["pro", "team"]), since: dateValue(rng, now) }),
    ])(),
};

export const TRAIT_PATHS = [
  "plan",
  "age",
  "vip",
  "score",
  "address",
  "address.country",
  "address.city",
  "items.0.sku",
  "items.1.sku",
  "items.1.qty",
  "tags.0",
  "tags.1",
  "signup",
  "seen",
  "acct.plan",
  "acct.since",
  "acct.seats",
  "missing",
] as const;

/** Scalars an Equals/NotEquals/HasBeen value is drawn from, per path (and a general mix). */
const SCALARS: Record<string, (string | number | boolean)[]> = {
  plan: ["free", "pro", "team", "Pro"],
  age: [17, 30, "30", 45.5],
  vip: [true, false, "true", 1],
  score: [0, 10, 99, "99", 10.5],
  "address.country": ["FR", "US"],
  "address.city": ["Paris", "Lyon"],
  address: ["FR"],
  "items.0.sku": ["a", "b"],
  "items.1.sku": ["b", "c"],
  "items.1.qty": [1, 2],
  "tags.0": ["x", "y"],
  "tags.1": ["y", "x"],
  "acct.plan": ["pro", "free", "team"],
  "acct.seats": [3, "3"],
  price: [5, 10, "10", 10.5],
  source: ["web", "app"],
  coupon: [true, "yes"],
};
const GENERAL_SCALARS: (string | number | boolean)[] = ["pro", 10, "10", true, "a", "FR", 0];
const NUMBERS = [0, 10, 17, 30, 99, 10.5, -1];

export const EVENT_NAMES = ["Bought", "Viewed", "Plan Changed", "Signed Up"] as const;

const PROPERTY_POOLS: Record<string, Pool> = {
  price: from(5, 10, 10.5, "10", 0, null),
  plan: from("free", "pro", "team"),
  source: from("web", "app", null),
  items: from([{ sku: "a" }], [{ sku: "a" }, { sku: "b" }], [], [{ sku: "c" }, { sku: "b" }]),
  at: dateValue,
  coupon: from(true, false, "yes"),
};
export const PROPERTY_PATHS = ["price", "plan", "source", "items.0.sku", "items.1.sku", "at", "coupon", "missing"] as const;

// --- The simulated workspace -----------------------------------------------------------------

/** An event as sent over HTTP (one item of a batch). */
export interface WireEvent {
  type: RefEvent["type"];
  messageId: string;
  userId?: string;
  anonymousId?: string;
  event?: string;
  name?: string;
  timestamp: string;
  properties?: Record<string, unknown>;
  traits?: Record<string, unknown>;
  previousId?: string;
  groupId?: string;
}

export function toRefEvent(w: WireEvent): RefEvent {
  const e: RefEvent = {
    messageId: w.messageId,
    type: w.type,
    identityId: (w.userId ?? w.anonymousId)!,
    time: Date.parse(w.timestamp),
  };
  if (w.type === "track") e.event = w.event!;
  if ((w.type === "page" || w.type === "screen") && w.name !== undefined) e.event = w.name;
  if (w.properties) e.properties = w.properties;
  if (w.traits && (w.type === "identify" || w.type === "group")) e.traits = w.traits;
  return e;
}

type Kind = "user" | "anon" | "linked" | "linkLater" | "aliased";

interface Person {
  kind: Kind;
  /** The traits last sent for this person (in sending order), to re-send or change some. */
  sentTraits: Record<string, unknown>;
  /** Name and time of the person's last track event. */
  lastTrack?: { event: string; timestamp: string };
  /** The userId, once the person has one. */
  userId?: string;
  /** anonymousId or previous id. */
  aliasId?: string;
}

/**
 * Mirrors what the server should hold after the wire events it was sent: the reference world
 * (events deduplicated by messageId, links with first-link-wins), and how to make more.
 */
export class Sim {
  readonly world: RefWorld = { events: [], links: {}, subscriptionGroups: {}, assignments: {}, manual: {} };
  /** Every wire event sent (for replays). */
  readonly sent: WireEvent[] = [];
  readonly people: Person[] = [];
  private seenMessageIds = new Set<string>();
  private identifyTimes = new Set<number>();
  private msgCounter = 0;

  constructor(
    readonly rng: Rng,
    readonly seed: number,
  ) {}

  messageId(): string {
    // Same length and alphabet: JS and PostgreSQL (any collation) order them alike.
    return `m${this.rng.hex(6)}${String(this.msgCounter++).padStart(6, "0")}`;
  }

  resolve(id: string): string {
    return this.world.links[id] ?? id;
  }

  /** Records a wire event as the server should: once per messageId, links first wins. */
  record(w: WireEvent) {
    this.sent.push(w);
    if (this.seenMessageIds.has(w.messageId)) return;
    this.seenMessageIds.add(w.messageId);
    this.world.events.push(toRefEvent(w));
    const source = w.type === "alias" ? w.previousId : w.type === "identify" && w.userId ? w.anonymousId : undefined;
    if (source !== undefined && w.userId !== undefined) {
      const target = this.resolve(w.userId);
      if (source !== target && this.world.links[source] === undefined) {
        this.world.links[source] = target;
        for (const [k, v] of Object.entries(this.world.links)) if (v === source) this.world.links[k] = target;
      }
    }
  }

  /** A time on a grid (so window edges are hit exactly) relative to `now`, mostly in the past. */
  eventTime(now: number, opts: { future?: boolean } = {}): number {
    const r = this.rng.next();
    if (opts.future && r < 0.06) return now + this.rng.pick([MIN, 30 * MIN, 2 * HOUR]);
    if (r < 0.3) return now - this.rng.pick(WINDOWS) * SEC; // exactly on a window edge at `now`
    if (r < 0.45) return now - this.rng.pick(WINDOWS) * SEC + this.rng.pick([-HOUR, -MIN, MIN, HOUR]);
    return now - this.rng.int(0, 10 * 24 * 4) * 15 * MIN;
  }

  /** Identify times are unique in the world, so the trait fold never depends on processing order. */
  identifyTime(now: number): number {
    // Now and then in the future: the trait's latest value then comes from an identify still to
    // happen, and HasBeen's `now − since` is negative.
    let t = this.eventTime(now, { future: this.rng.chance(0.5) });
    while (this.identifyTimes.has(t)) t += 1;
    this.identifyTimes.add(t);
    return t;
  }

  randomTraits(now: number): Record<string, unknown> {
    // Date traits twice as likely: their windows are what time moves.
    const weighted = Object.keys(TRAIT_POOLS).flatMap((k) => (k === "signup" || k === "seen" || k === "acct" ? [k, k] : [k]));
    const traits: Record<string, unknown> = {};
    for (let n = this.rng.int(1, 3), i = 0; i < n; i++) {
      const k = this.rng.pick(weighted);
      traits[k] = TRAIT_POOLS[k]!(this.rng, now);
    }
    return traits;
  }

  /** A person's next identify traits: new keys, or one they have re-sent unchanged or changed (HasBeen histories). */
  personTraits(p: Person, now: number): Record<string, unknown> {
    const known = Object.keys(p.sentTraits);
    let traits: Record<string, unknown>;
    if (known.length > 0 && this.rng.chance(0.45)) {
      const k = this.rng.pick(known);
      traits = { [k]: this.rng.chance(0.6) ? structuredClone(p.sentTraits[k]) : TRAIT_POOLS[k]!(this.rng, now) };
    } else {
      traits = this.randomTraits(now);
    }
    Object.assign(p.sentTraits, structuredClone(traits));
    return traits;
  }

  randomProperties(now: number): Record<string, unknown> | undefined {
    if (this.rng.chance(0.1)) return undefined;
    const keys = this.rng.sample(Object.keys(PROPERTY_POOLS), this.rng.int(0, 4));
    const props: Record<string, unknown> = {};
    for (const k of keys) props[k] = PROPERTY_POOLS[k]!(this.rng, now);
    return props;
  }

  /** The ids a person's events can be sent under at this point. */
  private sendIds(p: Person): { userId?: string; anonymousId?: string } {
    const linked = p.aliasId !== undefined && this.world.links[p.aliasId] !== undefined;
    switch (p.kind) {
      case "user":
        return { userId: p.userId! };
      case "anon":
        return { anonymousId: p.aliasId! };
      case "linked":
      case "linkLater":
        // After the link, now and then still under the anonymousId.
        return linked && this.rng.chance(0.7) ? { userId: p.userId! } : { anonymousId: p.aliasId! };
      case "aliased":
        // The previous id was a userId; after the alias it still may be sent.
        return linked && this.rng.chance(0.8) ? { userId: p.userId! } : { userId: p.aliasId! };
    }
  }

  /** A random event of one person (not a link). */
  personEvent(p: Person, now: number): WireEvent {
    const ids = this.sendIds(p);
    const kind = this.rng.weighted([
      ["identify", 5],
      ["track", 6],
      ["page", 0.5],
      ["group", 0.3],
    ] as const);
    const base = { messageId: this.messageId(), ...ids };
    switch (kind) {
      case "identify":
        return { ...base, type: "identify", timestamp: iso(this.identifyTime(now)), traits: this.personTraits(p, now) };
      case "track": {
        const props = this.randomProperties(now);
        // Now and then the same name at the same time as the person's previous track event:
        // LastPerformed must then take the greater messageId.
        const tie = p.lastTrack && this.rng.chance(0.2) ? p.lastTrack : undefined;
        const e: WireEvent = {
          ...base,
          type: "track",
          event: tie?.event ?? this.rng.pick(EVENT_NAMES),
          timestamp: tie?.timestamp ?? iso(this.eventTime(now, { future: true })),
          ...(props ? { properties: props } : {}),
        };
        p.lastTrack = { event: e.event!, timestamp: e.timestamp };
        return e;
      }
      case "page":
        // A page named like a track event: must not count for Performed.
        return { ...base, type: "page", name: this.rng.pick(EVENT_NAMES), timestamp: iso(this.eventTime(now)), properties: { price: 10 } };
      case "group":
        // Group traits are the group's, never the user's.
        return {
          ...base,
          type: "group",
          groupId: `g-${this.rng.int(1, 3)}`,
          timestamp: iso(this.eventTime(now)),
          traits: { plan: "team", vip: true },
        };
    }
  }

  /** The event linking a person's alias id to their userId. */
  linkEvent(p: Person, now: number): WireEvent {
    const timestamp = iso(this.identifyTime(now));
    if (p.kind === "aliased") return { type: "alias", messageId: this.messageId(), userId: p.userId!, previousId: p.aliasId!, timestamp };
    return {
      type: "identify",
      messageId: this.messageId(),
      userId: p.userId!,
      anonymousId: p.aliasId!,
      timestamp,
      traits: this.rng.chance(0.6) ? this.personTraits(p, now) : {},
    };
  }

  /** The initial population and their events, in a shuffled (processing) order. */
  initialEvents(n: number, now: number): WireEvent[] {
    const out: WireEvent[] = [];
    const tag = this.seed.toString(36);
    for (let i = 0; i < n; i++) {
      const kind = this.rng.weighted<Kind>([
        ["user", 45],
        ["anon", 15],
        ["linked", 20],
        ["linkLater", 12],
        ["aliased", 8],
      ]);
      const p: Person = { kind, sentTraits: {} };
      if (kind !== "anon" && kind !== "linkLater") p.userId = `u-${tag}-${i}`;
      if (kind !== "user") p.aliasId = kind === "aliased" ? `prev-${tag}-${i}` : `anon-${tag}-${i}`;
      this.people.push(p);
      const count = this.rng.int(kind === "user" ? 0 : 1, 12);
      const events: WireEvent[] = [];
      // Events before the link are under the alias id only; the link comes at a random place.
      const linkAt = kind === "linked" || kind === "aliased" ? this.rng.int(0, count) : -1;
      for (let j = 0; j <= count; j++) {
        if (j === linkAt) {
          const link = this.linkEvent(p, now);
          // Recorded now so later events of this person may use either id.
          this.record(link);
          events.push(link);
        }
        if (j < count) {
          const e = this.personEvent(p, now);
          this.record(e);
          events.push(e);
        }
      }
      out.push(...events);
    }
    return this.rng.shuffle(out);
  }

  /** More events for an incremental step: new facts, links of anonymous people, replays. */
  moreEvents(now: number, n: number): WireEvent[] {
    const out: WireEvent[] = [];
    for (let i = 0; i < n; i++) {
      const p = this.rng.pick(this.people);
      const e = this.personEvent(p, now);
      this.record(e);
      out.push(e);
    }
    // Link some anonymous people: to a fresh userId, or to an existing user (profiles merge).
    const later = this.people.filter((p) => p.kind === "linkLater" && !p.userId);
    for (const p of this.rng.sample(later, Math.max(1, Math.ceil(later.length / 2)))) {
      const existing = this.people.filter((q) => q.userId && q.kind === "user");
      p.userId =
        existing.length > 0 && this.rng.chance(0.5)
          ? this.rng.pick(existing).userId!
          : `u-${this.seed.toString(36)}-late-${this.msgCounter}`;
      const link = this.linkEvent(p, now);
      this.record(link);
      out.push(link);
      if (this.rng.chance(0.5)) {
        const e = this.personEvent(p, now);
        this.record(e);
        out.push(e);
      }
    }
    // Replays of earlier events, identical bodies.
    for (let i = 0; i < 3; i++) {
      const r = this.rng.pick(this.sent);
      this.record(r);
      out.push(r);
    }
    return this.rng.shuffle(out);
  }

  /** Canonical users now known, and which of them may take hand-set membership or assignments. */
  knownUsers(): string[] {
    return [...new Set(this.world.events.map((e) => this.resolve(e.identityId)))].sort();
  }

  /**
   * Users that can safely be assigned or hand-set: not an anonymous person who will be linked
   * later (what happens to an anonymous profile's assignments when it is linked is not specified).
   */
  stableUsers(): string[] {
    const unstable = new Set(this.people.filter((p) => p.kind === "linkLater" && !p.userId).map((p) => p.aliasId!));
    return this.knownUsers().filter((u) => !unstable.has(u));
  }

  /**
   * UserIds of people with no event yet: admin calls may name them before their first event (a
   * subscription or hand-set membership that counts once they arrive).
   */
  ghosts(): string[] {
    const known = new Set(this.knownUsers());
    return this.people.filter((p) => p.kind === "user" && !known.has(p.userId!)).map((p) => p.userId!);
  }

  /** An id to name a user by in an admin call: the canonical id, or now and then a linked alias of it. */
  idForAdmin(userId: string): string {
    const aliases = Object.entries(this.world.links)
      .filter(([, v]) => v === userId)
      .map(([k]) => k);
    return aliases.length > 0 && this.rng.chance(0.25) ? this.rng.pick(aliases) : userId;
  }
}

export const iso = (ms: number) => new Date(ms).toISOString();

// --- Definitions -----------------------------------------------------------------------------

export interface DefinitionContext {
  rng: Rng;
  now: number;
  subscriptionGroupIds: string[];
  allowManual: boolean;
}

function scalarFor(rng: Rng, path: string): string | number | boolean {
  const pool = SCALARS[path];
  return pool && rng.chance(0.8) ? rng.pick(pool) : rng.pick(GENERAL_SCALARS);
}

function valueOperator(c: DefinitionContext, path: string, type: Exclude<SegmentOperator["type"], "HasBeen">): SegmentOperator {
  const { rng } = c;
  switch (type) {
    case "Equals":
    case "NotEquals":
      return { type, value: scalarFor(rng, path) };
    case "Exists":
    case "NotExists":
      return { type };
    case "GreaterThanOrEqual":
    case "GreaterThan":
    case "LessThan":
    case "LessThanOrEqual": {
      // Thresholds at the path's own numbers (so ≥ / < hit equality) most of the time.
      const own = (SCALARS[path] ?? []).filter((v): v is number => typeof v === "number");
      return { type, value: own.length > 0 && rng.chance(0.7) ? rng.pick(own) : rng.pick(NUMBERS) };
    }
    case "Within":
      return { type, windowSeconds: rng.pick(WINDOWS) };
    case "AbsoluteTimestamp":
      return {
        type,
        absoluteTimestamp: c.now + rng.pick([-2 * DAY, -HOUR, 0, HOUR, 2 * DAY]),
        direction: rng.pick(["after", "before"] as const),
      };
  }
}

const VALUE_OPS = [
  "Equals",
  "NotEquals",
  "Exists",
  "NotExists",
  "GreaterThanOrEqual",
  "GreaterThan",
  "LessThan",
  "LessThanOrEqual",
  "Within",
  "AbsoluteTimestamp",
] as const;
const DATE_TRAIT_PATHS = ["signup", "seen", "acct.since"];

export function traitOperator(c: DefinitionContext, path: string, type?: SegmentOperator["type"]): SegmentOperator {
  const { rng } = c;
  const t = type ?? rng.pick([...VALUE_OPS, "HasBeen", "HasBeen"] as const);
  if (t === "HasBeen") {
    return { type: "HasBeen", comparator: rng.pick(["GTE", "LT"] as const), value: scalarFor(rng, path), windowSeconds: rng.pick(WINDOWS) };
  }
  return valueOperator(c, path, t);
}

const NUMERIC_TRAIT_PATHS = ["age", "score", "items.1.qty", "acct.seats", "vip"];
const SCALAR_TRAIT_PATHS = Object.keys(SCALARS).filter((k) => (TRAIT_PATHS as readonly string[]).includes(k));

/** A path that suits the operator most of the time (and any path now and then). */
function traitPath(c: DefinitionContext, opType: SegmentOperator["type"]): string {
  const { rng } = c;
  if (rng.chance(0.2)) return rng.pick(TRAIT_PATHS);
  switch (opType) {
    case "Within":
    case "AbsoluteTimestamp":
      return rng.pick(DATE_TRAIT_PATHS);
    case "GreaterThanOrEqual":
    case "GreaterThan":
    case "LessThan":
    case "LessThanOrEqual":
      return rng.pick(NUMERIC_TRAIT_PATHS);
    case "Equals":
    case "NotEquals":
    case "HasBeen":
      return rng.pick(SCALAR_TRAIT_PATHS);
    default:
      return rng.pick(TRAIT_PATHS);
  }
}

function propertyPath(c: DefinitionContext, opType: PropertyCondition["operator"]["type"]): string {
  const { rng } = c;
  if (rng.chance(0.2)) return rng.pick(PROPERTY_PATHS);
  switch (opType) {
    case "Within":
    case "AbsoluteTimestamp":
      return "at";
    case "GreaterThanOrEqual":
    case "GreaterThan":
    case "LessThan":
    case "LessThanOrEqual":
      return "price";
    case "Equals":
    case "NotEquals":
      return rng.pick(["price", "plan", "source", "coupon", "items.0.sku", "items.1.sku"]);
    default:
      return rng.pick(PROPERTY_PATHS);
  }
}

function propertyConditions(c: DefinitionContext, max: number): PropertyCondition[] {
  const { rng } = c;
  return Array.from({ length: rng.int(1, max) }, () => {
    const type = rng.pick(VALUE_OPS);
    const path = propertyPath(c, type);
    return { path, operator: valueOperator(c, path, type) as PropertyCondition["operator"] };
  });
}

export const LEAF_TYPES = ["Trait", "Performed", "LastPerformed", "Everyone", "SubscriptionGroup", "RandomBucket", "Manual"] as const;

/** A leaf node of the given (or a random) type. */
export function leafNode(
  c: DefinitionContext,
  id: string,
  type?: (typeof LEAF_TYPES)[number],
  opType?: SegmentOperator["type"],
): SegmentNode {
  const { rng } = c;
  let t =
    type ??
    rng.weighted<(typeof LEAF_TYPES)[number]>([
      ["Trait", 10],
      ["Performed", 6],
      ["LastPerformed", 3],
      ["Everyone", 0.5],
      ["SubscriptionGroup", c.subscriptionGroupIds.length > 0 ? 1.5 : 0],
      ["RandomBucket", 1],
      ["Manual", c.allowManual ? 1.5 : 0],
    ]);
  if (t === "Manual" && !c.allowManual) t = "Everyone";
  switch (t) {
    case "Trait": {
      const t = opType ?? rng.pick([...VALUE_OPS, "HasBeen", "HasBeen"] as const);
      const path = traitPath(c, t);
      return { type: "Trait", id, path, operator: traitOperator(c, path, t) };
    }
    case "Performed": {
      const node: SegmentNode = {
        type: "Performed",
        id,
        event: rng.pick(EVENT_NAMES),
        times: rng.weighted([
          [0, 1],
          [1, 4],
          [2, 3],
          [3, 1],
        ]),
        timesOperator: rng.weighted([
          [">=", 4],
          ["=", 2],
          ["<", 2],
        ] as const),
      };
      if (rng.chance(0.5)) node.withinSeconds = rng.pick(WINDOWS);
      if (rng.chance(0.4)) node.properties = propertyConditions(c, 2);
      return node;
    }
    case "LastPerformed": {
      const node: SegmentNode = { type: "LastPerformed", id, event: rng.pick(EVENT_NAMES) };
      if (rng.chance(0.4)) node.whereProperties = propertyConditions(c, 1);
      if (rng.chance(0.7)) node.hasProperties = propertyConditions(c, 2);
      return node;
    }
    case "Everyone":
      return { type: "Everyone", id };
    case "SubscriptionGroup":
      return { type: "SubscriptionGroup", id, subscriptionGroupId: rng.pick(c.subscriptionGroupIds) };
    case "RandomBucket":
      return { type: "RandomBucket", id, percent: rng.pick([0, 0.1, 0.5, 0.9, 1, Math.round(rng.next() * 1000) / 1000]) };
    case "Manual":
      return { type: "Manual", id };
  }
}

/** A random definition tree of depth ≤ maxDepth (the root at depth 1). */
export function randomDefinition(c: DefinitionContext, maxDepth = 3): SegmentDefinition {
  const nodes: SegmentNode[] = [];
  let next = 0;
  const build = (depth: number): SegmentNode => {
    const id = `n${next++}`;
    if (depth >= maxDepth || c.rng.chance(depth === 1 ? 0.25 : 0.55)) return leafNode(c, id);
    const kind = c.rng.weighted([
      ["And", 3],
      ["Or", 3],
      ["Not", 2],
    ] as const);
    if (kind === "Not") {
      const child = build(depth + 1);
      nodes.push(child);
      return { type: "Not", id, child: child.id };
    }
    const children = Array.from({ length: c.rng.chance(0.75) ? 2 : 3 }, () => build(depth + 1));
    nodes.push(...children);
    return { type: kind, id, children: children.map((ch) => ch.id) };
  };
  const entryNode = build(1);
  // Now and then the entry node is repeated in `nodes`, as the schema allows.
  if (c.rng.chance(0.1)) nodes.push(structuredClone(entryNode));
  return { entryNode, nodes: c.rng.shuffle(nodes) };
}

/** Definitions covering every node type and every operator at the root, then random trees. */
export function definitionSet(c: DefinitionContext, randomCount: number): SegmentDefinition[] {
  const defs: SegmentDefinition[] = [];
  for (const t of LEAF_TYPES) {
    if (t === "Manual" && !c.allowManual) continue;
    if (t === "SubscriptionGroup") {
      for (const g of c.subscriptionGroupIds)
        defs.push({ entryNode: { type: "SubscriptionGroup", id: "g", subscriptionGroupId: g }, nodes: [] });
      continue;
    }
    if (t === "Trait") {
      for (const op of [...VALUE_OPS, "HasBeen", "HasBeen"] as const) defs.push({ entryNode: leafNode(c, "t", "Trait", op), nodes: [] });
      continue;
    }
    defs.push({ entryNode: leafNode(c, "l", t), nodes: [] });
  }
  // Each composite at least once.
  defs.push({
    entryNode: { type: "Not", id: "not", child: "eq" },
    nodes: [{ type: "Trait", id: "eq", path: "plan", operator: { type: "Equals", value: "pro" } }],
  });
  defs.push({
    entryNode: { type: "And", id: "and", children: ["p", "t"] },
    nodes: [leafNode(c, "p", "Performed"), leafNode(c, "t", "Trait")],
  });
  defs.push({
    entryNode: { type: "Or", id: "or", children: ["lp", "hb"] },
    nodes: [leafNode(c, "lp", "LastPerformed"), leafNode(c, "hb", "Trait", "HasBeen")],
  });
  for (let i = 0; i < randomCount; i++) defs.push(randomDefinition(c));
  return defs;
}
