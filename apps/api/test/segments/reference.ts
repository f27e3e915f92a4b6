// A deliberately naive reference evaluator of segment definitions, written from docs/segments.md
// for the differential tests: no database, no incrementality, every user evaluated from scratch
// over the whole event list. Slow and obvious on purpose.
import { createHash } from "node:crypto";
import type { PropertyCondition, SegmentDefinition, SegmentNode, SegmentOperator } from "@tidings/schema";

export interface RefEvent {
  messageId: string;
  type: "track" | "identify" | "page" | "screen" | "group" | "alias";
  /** The id it was sent under: userId ?? anonymousId (not resolved). */
  identityId: string;
  event?: string;
  /** Event time, ms since epoch. */
  time: number;
  properties?: Record<string, unknown>;
  traits?: Record<string, unknown>;
}

export interface RefWorld {
  /** Every stored event (messageId unique), in processing order. */
  events: RefEvent[];
  /** Alias id (anonymousId or previous id) -> canonical user id. */
  links: Record<string, string>;
  subscriptionGroups: Record<string, "OptIn" | "OptOut">;
  /** groupId -> userId -> subscribed (true) / unsubscribed (false). */
  assignments: Record<string, Record<string, boolean>>;
  /** segmentId -> hand-set user ids. */
  manual: Record<string, string[]>;
}

// --- Values and paths ------------------------------------------------------------------------

const ABSENT: unique symbol = Symbol("absent");
type Value = unknown | typeof ABSENT;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const hasOwn = (o: object, k: string) => Object.hasOwn(o, k);

/** Reads a dot path: object keys, or array elements for non-negative integer steps. Missing or null → ABSENT. */
export function readPath(root: unknown, path: string): Value {
  let cur: unknown = root;
  for (const step of path.split(".")) {
    if (Array.isArray(cur)) {
      if (!/^(0|[1-9][0-9]*)$/.test(step)) return ABSENT;
      const i = Number(step);
      if (i >= cur.length) return ABSENT;
      cur = cur[i];
    } else if (isObject(cur)) {
      if (!hasOwn(cur, step)) return ABSENT;
      cur = cur[step];
    } else {
      return ABSENT;
    }
  }
  return cur === null || cur === undefined ? ABSENT : cur;
}

/** Equality by JSON type and value; objects and arrays equal nothing. */
function scalarEquals(v: Value, expected: string | number | boolean): boolean {
  if (v === ABSENT) return false;
  if (typeof v !== "string" && typeof v !== "number" && typeof v !== "boolean") return false;
  return typeof v === typeof expected && v === expected;
}

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|[+-]\d{2}:\d{2})?)?$/;

/** A date in ms, or null when the value is not a date (docs/segments.md "Dates"). */
export function parseDate(v: Value): number | null {
  if (typeof v === "number") {
    if (!Number.isFinite(v)) return null;
    return Math.abs(v) < 100_000_000_000 ? v * 1000 : v;
  }
  if (typeof v !== "string") return null;
  const m = ISO_DATE.exec(v);
  if (!m) return null;
  const [, y, mo, d, h = "00", mi = "00", s = "00", frac, zone] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s);
  // Calendar validity: 2024-02-30 or 25:00 are not dates.
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return null;
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (day > daysInMonth) return null;
  // Fraction digits beyond milliseconds are kept as a fraction of a millisecond.
  const ms = frac ? Number(`${frac.slice(0, 3).padEnd(3, "0")}.${frac.slice(3) || "0"}`) : 0;
  let t = Date.UTC(year, month - 1, day, hour, minute, second) + ms;
  // Date.UTC maps years 0–99 onto 1900–1999.
  if (year < 100) t = new Date(t).setUTCFullYear(year);
  if (zone && zone !== "Z") {
    const sign = zone[0] === "-" ? -1 : 1;
    const zh = Number(zone.slice(1, 3));
    const zm = Number(zone.slice(4, 6));
    if (zh > 23 || zm > 59) return null;
    t -= sign * (zh * 3600 + zm * 60) * 1000;
  }
  return t;
}

/** A value operator (every one but HasBeen) on a value read from a path. */
function valueOperatorHolds(op: SegmentOperator, v: Value, now: number): boolean {
  switch (op.type) {
    case "Equals":
      return scalarEquals(v, op.value);
    case "NotEquals":
      return v !== ABSENT && !scalarEquals(v, op.value);
    case "Exists":
      return v !== ABSENT;
    case "NotExists":
      return v === ABSENT;
    case "GreaterThanOrEqual":
      return typeof v === "number" && v >= op.value;
    case "LessThan":
      return typeof v === "number" && v < op.value;
    case "GreaterThan":
      return typeof v === "number" && v > op.value;
    case "LessThanOrEqual":
      return typeof v === "number" && v <= op.value;
    case "Within": {
      const d = parseDate(v);
      return d !== null && now - op.windowSeconds * 1000 <= d && d <= now;
    }
    case "AbsoluteTimestamp": {
      const d = parseDate(v);
      if (d === null) return false;
      return op.direction === "after" ? d > op.absoluteTimestamp : d < op.absoluteTimestamp;
    }
    case "HasBeen":
      throw new Error("HasBeen needs history: use traitHolds");
  }
}

// --- Users -----------------------------------------------------------------------------------

export function resolveId(world: RefWorld, id: string): string {
  return world.links[id] ?? id;
}

/** Every known user: the resolved identity of every event. */
export function knownUsers(world: RefWorld): Set<string> {
  return new Set(world.events.map((e) => resolveId(world, e.identityId)));
}

/** A user's events in processing order. */
export function eventsOf(world: RefWorld, userId: string): RefEvent[] {
  return world.events.filter((e) => resolveId(world, e.identityId) === userId);
}

/** The user's identify events in fold order: event time, then processing order. */
function identifiesInOrder(events: RefEvent[]): RefEvent[] {
  return events
    .map((e, i) => ({ e, i }))
    .filter(({ e }) => e.type === "identify")
    .sort((a, b) => a.e.time - b.e.time || a.i - b.i)
    .map(({ e }) => e);
}

/** Current traits: per top-level key, later event time wins, equal time → later processed wins. */
export function foldTraits(events: RefEvent[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const e of identifiesInOrder(events)) {
    for (const [k, v] of Object.entries(e.traits ?? {}))
      Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

// --- Nodes -----------------------------------------------------------------------------------

interface UserData {
  userId: string;
  events: RefEvent[];
  traits: Record<string, unknown>;
}

function traitHolds(u: UserData, path: string, op: SegmentOperator, now: number): boolean {
  const current = readPath(u.traits, path);
  if (op.type !== "HasBeen") return valueOperatorHolds(op, current, now);
  if (!scalarEquals(current, op.value)) return false;
  // Identify events that set the top-level key of the path, in fold order, with the value each
  // set at the path.
  const top = path.split(".")[0]!;
  const settings = identifiesInOrder(u.events)
    .filter((e) => e.traits !== undefined && hasOwn(e.traits, top))
    .map((e) => ({ time: e.time, equal: scalarEquals(readPath(e.traits, path), op.value) }));
  let lastOther = -1;
  settings.forEach((s, i) => {
    if (!s.equal) lastOther = i;
  });
  const since = settings.slice(lastOther + 1).find((s) => s.equal);
  if (!since) return false; // cannot happen while the current value equals
  const held = now - since.time;
  return op.comparator === "GTE" ? held >= op.windowSeconds * 1000 : held < op.windowSeconds * 1000;
}

function propertiesHold(e: RefEvent, conditions: PropertyCondition[] | undefined, now: number): boolean {
  return (conditions ?? []).every((c) => valueOperatorHolds(c.operator, readPath(e.properties ?? {}, c.path), now));
}

/** The user's track events named `name`, each messageId once. */
function tracksNamed(u: UserData, name: string): RefEvent[] {
  const seen = new Set<string>();
  return u.events.filter((e) => {
    if (e.type !== "track" || e.event !== name || seen.has(e.messageId)) return false;
    seen.add(e.messageId);
    return true;
  });
}

export function randomBucketValue(segmentId: string, userId: string): number {
  const hex = createHash("md5").update(`${segmentId}:${userId}`).digest("hex").slice(0, 8);
  return parseInt(hex, 16) / 2 ** 32;
}

interface EvalContext {
  world: RefWorld;
  nodes: Map<string, SegmentNode>;
  segmentId: string;
  now: number;
}

function evalNode(ctx: EvalContext, node: SegmentNode, u: UserData): boolean {
  const { now } = ctx;
  switch (node.type) {
    case "Trait":
      return traitHolds(u, node.path, node.operator, now);
    case "Performed": {
      const times = node.times ?? 1;
      const timesOperator = node.timesOperator ?? ">=";
      const from = node.withinSeconds === undefined ? -Infinity : now - node.withinSeconds * 1000;
      const count = tracksNamed(u, node.event).filter((e) => e.time >= from && propertiesHold(e, node.properties, now)).length;
      if (timesOperator === ">=") return count >= times;
      if (timesOperator === "=") return count === times;
      return count < times;
    }
    case "LastPerformed": {
      const considered = tracksNamed(u, node.event).filter((e) => propertiesHold(e, node.whereProperties, now));
      if (considered.length === 0) return false;
      let last = considered[0]!;
      for (const e of considered) {
        if (e.time > last.time || (e.time === last.time && e.messageId > last.messageId)) last = e;
      }
      return propertiesHold(last, node.hasProperties, now);
    }
    case "And":
      return node.children.every((id) => evalNode(ctx, nodeById(ctx, id), u));
    case "Or":
      return node.children.some((id) => evalNode(ctx, nodeById(ctx, id), u));
    case "Not":
      return !evalNode(ctx, nodeById(ctx, node.child), u);
    case "Everyone":
      return true;
    case "SubscriptionGroup": {
      const type = ctx.world.subscriptionGroups[node.subscriptionGroupId];
      const choice = ctx.world.assignments[node.subscriptionGroupId]?.[u.userId];
      if (type === "OptIn") return choice === true;
      if (type === "OptOut") return choice !== false;
      return false;
    }
    case "RandomBucket":
      return randomBucketValue(ctx.segmentId, u.userId) < node.percent;
    case "Manual":
      return (ctx.world.manual[ctx.segmentId] ?? []).includes(u.userId);
  }
}

function nodeById(ctx: EvalContext, id: string): SegmentNode {
  const n = ctx.nodes.get(id);
  if (!n) throw new Error(`unknown node ${id}`);
  return n;
}

/** Per-user data (events, folded traits), computed once and reusable across definitions. */
export function userData(world: RefWorld): Map<string, UserData> {
  const byUser = new Map<string, RefEvent[]>();
  for (const e of world.events) {
    const u = resolveId(world, e.identityId);
    const list = byUser.get(u) ?? [];
    list.push(e);
    byUser.set(u, list);
  }
  return new Map([...byUser].map(([userId, events]) => [userId, { userId, events, traits: foldTraits(events) }]));
}

/** Whether the definition holds for one user at `now`. */
export function referenceHolds(world: RefWorld, def: SegmentDefinition, segmentId: string, now: number, u: UserData): boolean {
  const nodes = new Map<string, SegmentNode>();
  nodes.set(def.entryNode.id, def.entryNode);
  for (const n of def.nodes ?? []) nodes.set(n.id, n);
  return evalNode({ world, nodes, segmentId, now }, def.entryNode, u);
}

/** The members of the segment at `now`: the known users for whom its entry node holds. */
export function referenceMembers(
  world: RefWorld,
  def: SegmentDefinition,
  segmentId: string,
  now: number,
  users: Map<string, UserData> = userData(world),
): Set<string> {
  const out = new Set<string>();
  for (const u of users.values()) if (referenceHolds(world, def, segmentId, now, u)) out.add(u.userId);
  return out;
}
