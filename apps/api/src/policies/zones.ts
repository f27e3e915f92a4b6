// Time in each user's zone (Luxon over the runtime's IANA data): which zone a user is in, whether
// a send window is open at an instant, when it next opens, and when a frequency cap's window
// lets a counted send go. Local times that do not exist (the hour skipped when clocks go forward)
// move forward to the first one that does; a window across midnight belongs to the day it opens.
import { remember } from "../lib/remember.ts";
import type { CapWindow, SendWindow, Weekday } from "@tidings/schema";
import { DateTime, IANAZone } from "luxon";

export type ZoneSource = "trait" | "workspace" | "utc";

export interface UserZone {
  zone: string;
  source: ZoneSource;
  /** Set when the user's `timezone` trait is not a zone (reported on the delivery, not silently UTC). */
  invalidTrait?: string;
}

const validity = new Map<string, boolean>();
/** Whether `zone` is an IANA zone (remembered: a chunk's users share a few zones). */
function isZone(zone: string): boolean {
  if (validity.size > 10_000) validity.clear();
  return remember(validity, zone, () => IANAZone.isValidZone(zone));
}

/** The user's zone: the `timezone` trait (IANA), else the workspace's default, else UTC. */
export function userZone(traits: Record<string, unknown>, workspaceDefault: string | undefined): UserZone {
  const trait = traits.timezone;
  if (typeof trait === "string" && trait !== "" && isZone(trait)) return { zone: trait, source: "trait" };
  const invalidTrait = trait === undefined || trait === null || trait === "" ? undefined : String(trait).slice(0, 64);
  const fallback: UserZone = workspaceDefault ? { zone: workspaceDefault, source: "workspace" } : { zone: "UTC", source: "utc" };
  return invalidTrait === undefined ? fallback : { ...fallback, invalidTrait };
}

const WEEKDAYS: Weekday[] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

/** `HH:MM` on the local day `day` (24:00: the next midnight). */
function at(day: DateTime, time: string): DateTime {
  const [hour, minute] = time.split(":").map(Number) as [number, number];
  if (hour === 24) return day.plus({ days: 1 }).startOf("day");
  return DateTime.fromObject({ year: day.year, month: day.month, day: day.day, hour, minute }, { zone: day.zone });
}

/** The window's opening on the local day `day`, and its closing (the next day's when it runs across midnight). */
function span(day: DateTime, w: Pick<SendWindow, "from" | "to">): [DateTime, DateTime] {
  const open = at(day, w.from);
  const close = w.to > w.from || w.to === "24:00" ? at(day, w.to) : at(day.plus({ days: 1 }), w.to);
  return [open, close];
}

const opensOn = (day: DateTime, w: Pick<SendWindow, "days">) => w.days.includes(WEEKDAYS[day.weekday - 1]!);

/** Whether the window is open at `nowMs` in `zone`, and else when it next opens. */
export function windowAt(
  nowMs: number,
  zone: string,
  w: Pick<SendWindow, "from" | "to" | "days">,
): { open: true } | { open: false; opensAt: number } {
  const now = DateTime.fromMillis(nowMs, { zone });
  const today = now.startOf("day");
  for (const day of [today.minus({ days: 1 }), today]) {
    if (!opensOn(day, w)) continue;
    const [open, close] = span(day, w);
    if (open.toMillis() <= nowMs && nowMs < close.toMillis()) return { open: true };
  }
  for (let i = 0; i <= 8; i++) {
    const day = today.plus({ days: i });
    if (!opensOn(day, w)) continue;
    const [open] = span(day, w);
    if (open.toMillis() > nowMs) return { open: false, opensAt: open.toMillis() };
  }
  throw new Error("a send window without an opening within eight days"); // days has at least one weekday
}

/** The earliest instant a cap's window still counts at `nowMs`: `seconds` back, or local midnight `days - 1` days back. */
export function capWindowStart(nowMs: number, zone: string, w: CapWindow): number {
  if (w.seconds !== undefined) return nowMs - w.seconds * 1000;
  return DateTime.fromMillis(nowMs, { zone })
    .startOf("day")
    .minus({ days: (w.days ?? 1) - 1 })
    .toMillis();
}

/** When a send counted at `sentMs` leaves the cap's window: `seconds` later, or the local midnight `days` days on. */
export function capFreesAt(sentMs: number, zone: string, w: CapWindow): number {
  if (w.seconds !== undefined) return sentMs + w.seconds * 1000;
  return DateTime.fromMillis(sentMs, { zone })
    .startOf("day")
    .plus({ days: w.days ?? 1 })
    .toMillis();
}
