// Folding the traits of one commit's events per profile: later or equal event time wins per key.
import { describe, expect, it } from "vitest";
import { TraitFold } from "../../src/ingest/trait-fold.ts";

const parsed = (fold: TraitFold) => {
  const r = fold.result();
  return { traits: JSON.parse(r.traits), times: JSON.parse(r.times), timeMax: r.timeMax, uniform: r.uniform };
};

describe("TraitFold", () => {
  it("keeps a single event's traits with one time for every key", () => {
    const fold = new TraitFold();
    fold.add({ plan: "pro", n: 1 }, 1000);
    expect(parsed(fold)).toEqual({ traits: { plan: "pro", n: 1 }, times: { plan: 1000, n: 1000 }, timeMax: 1000, uniform: true });
  });

  it("is empty, with time 0, when no event carries traits", () => {
    const fold = new TraitFold();
    fold.add({}, 5000);
    expect(parsed(fold)).toEqual({ traits: {}, times: {}, timeMax: 0, uniform: true });
  });

  it("merges per key: a later or equal time wins, an older one only fills keys it alone has", () => {
    const fold = new TraitFold();
    fold.add({ plan: "pro", seats: 3 }, 2000);
    fold.add({ plan: "free", email: "a@example.com" }, 1000);
    fold.add({ seats: 5 }, 2000);
    expect(parsed(fold)).toEqual({
      traits: { plan: "pro", seats: 5, email: "a@example.com" },
      times: { plan: 2000, seats: 2000, email: 1000 },
      timeMax: 2000,
      uniform: false,
    });
  });

  it("takes its newest time from the keys, not from an event without traits", () => {
    const fold = new TraitFold();
    fold.add({}, 9000);
    fold.add({ plan: "pro" }, 1000);
    expect(parsed(fold)).toMatchObject({ timeMax: 1000, uniform: true });
  });

  it("never changes the events' own traits objects (a commit may be folded twice)", () => {
    const first = { plan: "pro" };
    const second = { plan: "free", n: 2 };
    const fold = new TraitFold();
    fold.add(first, 1000);
    fold.add(second, 1000);
    fold.add({ plan: "team" }, 500);
    expect(first).toEqual({ plan: "pro" });
    expect(second).toEqual({ plan: "free", n: 2 });
    expect(parsed(fold).traits).toEqual({ plan: "free", n: 2 });
  });
});
