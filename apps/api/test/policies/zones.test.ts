// Send windows and cap windows in users' zones, at fixed instants: across midnight, both DST
// changes in New York, and zones at +05:45, +14:00 and −11:00.
import { describe, expect, it } from "vitest";
import { capFreesAt, capWindowStart, userZone, windowAt } from "../../src/policies/zones.ts";

const t = (iso: string) => Date.parse(iso);
const every = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"] as const;
const night = { from: "22:00", to: "06:00", days: [...every] };

describe("windowAt", () => {
  it("holds a window across midnight on the night the clocks go forward (New York, 8 March 2026)", () => {
    // 23:30 EST on the 7th: open.
    expect(windowAt(t("2026-03-08T04:30:00Z"), "America/New_York", night)).toEqual({ open: true });
    // 05:30 EDT on the 8th (the night was an hour shorter): still open; 06:00 EDT closes it.
    expect(windowAt(t("2026-03-08T09:30:00Z"), "America/New_York", night)).toEqual({ open: true });
    expect(windowAt(t("2026-03-08T10:00:00Z"), "America/New_York", night)).toEqual({ open: false, opensAt: t("2026-03-09T02:00:00Z") });
  });

  it("opens at 09:00 local on the Monday after the clocks go back (New York, 1 November 2026)", () => {
    const office = { from: "09:00", to: "17:00", days: ["Mon", "Tue", "Wed", "Thu", "Fri"] as const };
    // Friday 30 October 18:00 EDT: closed until Monday 2 November 09:00 EST (14:00 UTC, not 13:00).
    expect(windowAt(t("2026-10-30T22:00:00Z"), "America/New_York", { ...office, days: [...office.days] })).toEqual({
      open: false,
      opensAt: t("2026-11-02T14:00:00Z"),
    });
    // The 25-hour Sunday: 01:30 happens twice; the night window is open through both.
    expect(windowAt(t("2026-11-01T05:30:00Z"), "America/New_York", night)).toEqual({ open: true });
    expect(windowAt(t("2026-11-01T06:30:00Z"), "America/New_York", night)).toEqual({ open: true });
  });

  it("keeps quarter hours at +05:45 (Kathmandu)", () => {
    const morning = { from: "09:00", to: "10:00", days: [...every] };
    expect(windowAt(t("2026-06-01T03:00:00Z"), "Asia/Kathmandu", morning)).toEqual({ open: false, opensAt: t("2026-06-01T03:15:00Z") });
    expect(windowAt(t("2026-06-01T03:15:00Z"), "Asia/Kathmandu", morning)).toEqual({ open: true });
    expect(windowAt(t("2026-06-01T04:15:00Z"), "Asia/Kathmandu", morning)).toEqual({ open: false, opensAt: t("2026-06-02T03:15:00Z") });
  });

  it("takes the weekday in the user's zone at +14:00 (Kiritimati: Monday while UTC is still Sunday)", () => {
    const mondays = { from: "09:00", to: "10:00", days: ["Mon" as const] };
    expect(windowAt(t("2026-05-31T19:00:00Z"), "Pacific/Kiritimati", mondays)).toEqual({ open: true });
    expect(windowAt(t("2026-05-31T19:00:00Z"), "UTC", mondays)).toEqual({ open: false, opensAt: t("2026-06-01T09:00:00Z") });
  });

  it("gives a window across midnight to the day it opens on, at −11:00 (Pago Pago)", () => {
    const saturdayNight = { from: "23:00", to: "01:00", days: ["Sat" as const] };
    expect(windowAt(t("2026-06-07T10:30:00Z"), "Pacific/Pago_Pago", saturdayNight)).toEqual({ open: true }); // Sat 23:30
    expect(windowAt(t("2026-06-07T11:30:00Z"), "Pacific/Pago_Pago", saturdayNight)).toEqual({ open: true }); // Sun 00:30
    expect(windowAt(t("2026-06-07T12:30:00Z"), "Pacific/Pago_Pago", saturdayNight)).toEqual({
      open: false,
      opensAt: t("2026-06-14T10:00:00Z"),
    });
  });

  it("treats 24:00 as the end of the day", () => {
    const evening = { from: "18:00", to: "24:00", days: [...every] };
    expect(windowAt(t("2026-06-01T23:59:00Z"), "UTC", evening)).toEqual({ open: true });
    expect(windowAt(t("2026-06-02T00:00:00Z"), "UTC", evening)).toEqual({ open: false, opensAt: t("2026-06-02T18:00:00Z") });
  });
});

describe("cap windows", () => {
  it("counts calendar days from local midnight and frees a send at the local midnight after, 25-hour day included", () => {
    expect(capWindowStart(t("2026-11-01T12:00:00Z"), "America/New_York", { days: 1 })).toBe(t("2026-11-01T04:00:00Z"));
    expect(capWindowStart(t("2026-11-01T12:00:00Z"), "America/New_York", { days: 2 })).toBe(t("2026-10-31T04:00:00Z"));
    expect(capFreesAt(t("2026-11-01T03:30:00Z"), "America/New_York", { days: 1 })).toBe(t("2026-11-01T04:00:00Z"));
    expect(capFreesAt(t("2026-11-01T12:00:00Z"), "America/New_York", { days: 1 })).toBe(t("2026-11-02T05:00:00Z"));
  });

  it("rolls by seconds", () => {
    expect(capWindowStart(10_000_000, "Asia/Kathmandu", { seconds: 60 })).toBe(10_000_000 - 60_000);
    expect(capFreesAt(10_000_000, "Asia/Kathmandu", { seconds: 60 })).toBe(10_060_000);
  });
});

describe("userZone", () => {
  it("takes the timezone trait, else the workspace's zone, else UTC, and names a trait that is not a zone", () => {
    expect(userZone({ timezone: "Asia/Kathmandu" }, "Europe/Berlin")).toEqual({ zone: "Asia/Kathmandu", source: "trait" });
    expect(userZone({}, "Europe/Berlin")).toEqual({ zone: "Europe/Berlin", source: "workspace" });
    expect(userZone({}, undefined)).toEqual({ zone: "UTC", source: "utc" });
    expect(userZone({ timezone: "Mars/Olympus" }, undefined)).toEqual({ zone: "UTC", source: "utc", invalidTrait: "Mars/Olympus" });
  });
});
