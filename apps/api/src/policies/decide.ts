// The decision for a chunk of claimed messages, in the order they were queued: send, hold until a
// time (Deferred), or skip — from the workspace's rules, each user's zone and the sends each cap
// already counts (read by gate.ts under the users' locks). Pure: the same inputs, the same answer.
import { remember } from "../lib/remember.ts";
import { type Channel, DEFAULT_TTL_SECONDS, type FrequencyCap, type Policies, type SendWindow, TRANSACTIONAL } from "@tidings/schema";
import { capFreesAt, windowAt } from "./zones.ts";

export interface Candidate {
  id: string;
  userId: string;
  channel: Channel;
  category: string | null;
  /** When it was queued (its time-to-live counts from here). */
  createdAt: number;
  zone: string;
  /** A hold skips it whatever the rule's action (a journey node's `whenHeld: skip`). */
  skipWhenHeld?: boolean;
}

/** What held a message: a frequency cap, a send window, or (skips only) its time-to-live. */
export type HoldRule = "cap" | "window" | "ttl";

export type Decision =
  | { kind: "send" }
  | { kind: "defer"; notBefore: number; reason: string; rule: HoldRule }
  | { kind: "skip"; reason: string; rule: HoldRule };

/** Every message that goes shares this decision. */
const SEND: Decision = { kind: "send" };

/** A rule applies to a message of its channel (or any) and its category (or any but transactional). */
export function inScope(rule: { channel?: Channel; category?: string }, c: Pick<Candidate, "channel" | "category">): boolean {
  if (rule.channel !== undefined && rule.channel !== c.channel) return false;
  return rule.category === undefined ? c.category !== TRANSACTIONAL : rule.category === c.category;
}

/**
 * The sends a cap counts for a user: how many, and the times of the newest first, at most the
 * limit — known wherever the count can reach the limit.
 */
export interface Counted {
  n: number;
  newest: number[];
}

/** Per user, per cap (by its index in the policies): the sends it counts, where it is in scope. */
export type CountedSends = Map<string, (Counted | undefined)[]>;

/** The caps and the send windows in scope of a channel and category, with their indexes. */
export interface Scope {
  caps: { cap: FrequencyCap; i: number }[];
  windows: { w: SendWindow; index: number }[];
}

/** Each message's scope, found once per channel and category (a chunk has a few). */
export function scopes(p: Policies): (c: Pick<Candidate, "channel" | "category">) => Scope {
  const known = new Map<string, Scope>();
  return (c) =>
    remember(known, c.category === null ? c.channel : `${c.channel}:${c.category}`, () => ({
      caps: p.frequencyCaps.map((cap, i) => ({ cap, i })).filter(({ cap }) => inScope(cap, c)),
      windows: p.sendWindows.map((w, index) => ({ w, index })).filter(({ w }) => inScope(w, c)),
    }));
}

const when = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");

interface Hold {
  until: number;
  reason: string;
  skip: boolean;
  rule: "cap" | "window";
}

/** A window's state at one instant, per zone: the same for every message of a chunk in that zone. */
type WindowStates = Map<string, ReturnType<typeof windowAt>>;

function windowHold(w: SendWindow, c: Candidate, nowMs: number, states: WindowStates): Hold | null {
  const state = remember(states, c.zone, () => windowAt(nowMs, c.zone, w));
  if (state.open) return null;
  return {
    until: state.opensAt,
    reason: `outside send window "${w.name}" (${w.from}–${w.to} ${c.zone}; opens ${when(state.opensAt)})`,
    skip: w.action === "skip",
    rule: "window",
  };
}

function capHold(cap: FrequencyCap, counted: Counted | undefined, c: Candidate): Hold | null {
  if (!counted || counted.n < cap.limit) return null;
  const until = capFreesAt(counted.newest[cap.limit - 1]!, c.zone, cap.window);
  const span = cap.window.seconds !== undefined ? `${cap.window.seconds} s` : `${cap.window.days} day${cap.window.days === 1 ? "" : "s"}`;
  return {
    until,
    reason: `frequency cap "${cap.name}" (${cap.limit} per ${span}) reached; room at ${when(until)}`,
    skip: cap.action === "skip",
    rule: "cap",
  };
}

/** The time-to-live of a category's messages, in ms. */
const ttlMs = (p: Policies, category: string | null) =>
  (p.categories.find((c) => c.category === category)?.timeToLiveSeconds ?? p.timeToLiveSeconds ?? DEFAULT_TTL_SECONDS) * 1000;

/**
 * Decides each candidate in order. A message that goes counts at once for the caps in its scope,
 * so the next message of the same user in the chunk sees it. Several holds: a `skip` rule wins,
 * else the latest time; held past the time-to-live is a skip.
 */
export function decide(p: Policies, candidates: readonly Candidate[], counted: CountedSends, nowMs: number): Map<string, Decision> {
  const states: WindowStates[] = p.sendWindows.map(() => new Map());
  const scopeOf = scopes(p);
  const out = new Map<string, Decision>();
  for (const c of candidates) {
    const { caps, windows } = scopeOf(c);
    const holds: Hold[] = [];
    for (const { w, index } of windows) {
      const h = windowHold(w, c, nowMs, states[index]!);
      if (h) holds.push(h);
    }
    const mine = counted.get(c.userId);
    for (const { cap, i } of caps) {
      const h = capHold(cap, mine?.[i], c);
      if (h) holds.push(h);
    }
    if (holds.length === 0) {
      if (caps.length > 0) {
        const had = mine ?? remember(counted, c.userId, () => []);
        for (const { i } of caps) {
          had[i] ??= { n: 0, newest: [] };
          had[i].n++;
          had[i].newest.unshift(nowMs);
        }
      }
      out.set(c.id, SEND);
      continue;
    }
    const skip = holds.find((h) => h.skip) ?? (c.skipWhenHeld ? holds[0] : undefined);
    if (skip) {
      out.set(c.id, { kind: "skip", reason: `skipped: ${skip.reason}`, rule: skip.rule });
      continue;
    }
    const latest = holds.reduce((a, b) => (b.until > a.until ? b : a));
    const expires = c.createdAt + ttlMs(p, c.category);
    out.set(
      c.id,
      latest.until > expires
        ? { kind: "skip", reason: `held past its time-to-live (${when(expires)}): ${latest.reason}`, rule: "ttl" }
        : { kind: "defer", notBefore: latest.until, reason: `held: ${latest.reason}`, rule: latest.rule },
    );
  }
  return out;
}
