// The decision for a chunk: caps counted across the chunk in order, windows, the most restrictive
// hold, skip rules, categories (transactional exempt unless named) and the time-to-live.
import { DEFAULT_TTL_SECONDS, type Policies } from "@tidings/schema";
import { describe, expect, it } from "vitest";
import { type Candidate, decide } from "../../src/policies/decide.ts";

const NOW = Date.parse("2026-06-01T12:00:00Z"); // a Monday
const base: Policies = { timeToLiveSeconds: DEFAULT_TTL_SECONDS, categories: [], frequencyCaps: [], sendWindows: [], providerRates: [] };
const msg = (id: string, extra: Partial<Candidate> = {}): Candidate => ({
  id,
  userId: "ann",
  channel: "Sms",
  category: null,
  createdAt: NOW - 1000,
  zone: "UTC",
  ...extra,
});
const kinds = (d: Map<string, { kind: string }>) => [...d.values()].map((x) => x.kind);
/** Counted sends of a cap, newest first. */
const sends = (...times: number[]) => ({ n: times.length, newest: times });

describe("decide", () => {
  it("lets exactly `limit` messages of a user through a cap, counting the chunk itself, and defers the rest to local midnight", () => {
    const p = { ...base, frequencyCaps: [{ name: "three a day", limit: 3, window: { days: 1 }, action: "defer" as const }] };
    const d = decide(
      p,
      ["a", "b", "c", "d", "e"].map((id) => msg(id)),
      new Map(),
      NOW,
    );
    expect(kinds(d)).toEqual(["send", "send", "send", "defer", "defer"]);
    expect(d.get("d")).toMatchObject({ notBefore: Date.parse("2026-06-02T00:00:00Z") });
    expect((d.get("d") as { reason: string }).reason).toContain('frequency cap "three a day" (3 per 1 day) reached');
    // Another user is counted apart.
    expect(kinds(decide(p, [msg("x", { userId: "bob" })], new Map(), NOW))).toEqual(["send"]);
  });

  it("frees a rolling cap when the oldest counted send leaves the window", () => {
    const p = { ...base, frequencyCaps: [{ name: "two a minute", limit: 2, window: { seconds: 60 }, action: "defer" as const }] };
    const counted = new Map([["ann", [sends(NOW - 10_000, NOW - 50_000)]]]);
    expect(decide(p, [msg("a")], counted, NOW).get("a")).toMatchObject({ kind: "defer", notBefore: NOW + 10_000 });
  });

  it("exempts transactional messages unless a rule names them; scopes by channel", () => {
    const p = {
      ...base,
      frequencyCaps: [
        { name: "sms", limit: 1, window: { days: 1 }, channel: "Sms" as const, action: "defer" as const },
        { name: "receipts", limit: 1, window: { days: 1 }, category: "transactional", action: "defer" as const },
      ],
    };
    const counted = new Map([["ann", [sends(NOW - 1000), sends()]]]);
    const d = decide(
      p,
      [
        msg("mkt"),
        msg("mail", { channel: "Email" }),
        msg("rcpt1", { category: "transactional" }),
        msg("rcpt2", { category: "transactional" }),
      ],
      counted,
      NOW,
    );
    expect(Object.fromEntries([...d].map(([id, x]) => [id, x.kind]))).toEqual({
      mkt: "defer",
      mail: "send",
      rcpt1: "send",
      rcpt2: "defer",
    });
  });

  it("holds to the latest time when several rules hold; a skip rule wins", () => {
    const window = { name: "daytime", from: "18:00", to: "20:00", days: ["Mon" as const, "Tue" as const], action: "defer" as const };
    const cap = { name: "one a minute", limit: 1, window: { seconds: 60 }, action: "defer" as const };
    const counted = new Map([["ann", [sends(NOW - 1000)]]]);
    const held = decide({ ...base, frequencyCaps: [cap], sendWindows: [window] }, [msg("a")], counted, NOW).get("a");
    expect(held).toMatchObject({ kind: "defer", notBefore: Date.parse("2026-06-01T18:00:00Z") });
    expect((held as { reason: string }).reason).toMatch(
      /^held: outside send window "daytime" \(18:00–20:00 UTC; opens 2026-06-01T18:00:00Z\)$/,
    );
    const skipped = decide(
      { ...base, frequencyCaps: [{ ...cap, action: "skip" as const }], sendWindows: [window] },
      [msg("a")],
      counted,
      NOW,
    ).get("a");
    expect(skipped).toMatchObject({ kind: "skip" });
    expect((skipped as { reason: string }).reason).toMatch(/^skipped: frequency cap "one a minute"/);
  });

  it("skips a message that would be held past its time-to-live (per category)", () => {
    const window = { name: "mornings", from: "08:00", to: "09:00", days: ["Mon" as const, "Tue" as const], action: "defer" as const };
    const p = { ...base, sendWindows: [window], categories: [{ category: "flash", timeToLiveSeconds: 3600 }] };
    const d = decide(p, [msg("keep"), msg("flash", { category: "flash" })], new Map(), NOW);
    expect(d.get("keep")).toMatchObject({ kind: "defer", notBefore: Date.parse("2026-06-02T08:00:00Z") });
    expect(d.get("flash")).toMatchObject({ kind: "skip" });
    expect((d.get("flash") as { reason: string }).reason).toMatch(
      /^held past its time-to-live \(2026-06-01T12:59:59Z\): outside send window "mornings"/,
    );
    // Without the per-category rule, the default 72 h: a window a week away is past it.
    const weekly = decide({ ...p, sendWindows: [{ ...window, days: ["Mon" as const] }] }, [msg("keep")], new Map(), NOW);
    expect(weekly.get("keep")).toMatchObject({ kind: "skip" });
  });
});
