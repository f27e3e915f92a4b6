// What a drained batch asks a segment to evaluate (src/segments/engine/scope.ts): which ids, and
// which of them only if they are, or are not, members — decided from what each outbox row changed.
import type { SegmentDefinition, SegmentNode } from "@tidings/schema";
import { describe, expect, it } from "vitest";
import { addedEventsCanOnly, segmentDependencies } from "../../src/segments/engine/compile.ts";
import { batchScopes, segmentScope } from "../../src/segments/engine/scope.ts";

const def = (entryNode: SegmentNode, nodes: SegmentNode[] = []): SegmentDefinition => ({ entryNode, nodes });
const performed = (id: string, event: string, timesOperator: ">=" | "<" | "=", extra = {}) =>
  ({ type: "Performed", id, event, times: 1, timesOperator, ...extra }) as SegmentNode;
const pro = { type: "Trait", id: "pro", path: "plan", operator: { type: "Equals", value: "pro" } } as SegmentNode;
const bought = performed("b", "Bought", ">=");
const proBuyers = def({ type: "And", id: "and", children: ["pro", "b"] } as SegmentNode, [pro, bought]);
const neverBought = def(performed("n", "Bought", "<"));

describe("what added track events can do to a membership", () => {
  it("only let a user enter through `>=` counts, only leave through `<` counts, either through `=` or the last event", () => {
    const only = (d: SegmentDefinition, ...events: string[]) => addedEventsCanOnly(d, new Set(events));
    expect(only(def(bought), "Bought")).toBe("enter");
    expect(only(def(performed("w", "Bought", ">=", { withinSeconds: 60, times: 3 })), "Bought")).toBe("enter");
    expect(only(neverBought, "Bought")).toBe("exit");
    expect(only(def(performed("e", "Bought", "=")), "Bought")).toBeNull();
    expect(only(def({ type: "LastPerformed", id: "l", event: "Bought" } as SegmentNode), "Bought")).toBeNull();
    // Not turns one into the other; And and Or keep a single direction, and mix two into either.
    expect(only(def({ type: "Not", id: "not", child: "b" } as SegmentNode, [bought]), "Bought")).toBe("exit");
    expect(only(proBuyers, "Bought")).toBe("enter");
    const boughtOnce = def({ type: "And", id: "and", children: ["b", "n"] } as SegmentNode, [
      bought,
      performed("n", "Bought", "<", { times: 2 }),
    ]);
    expect(only(boughtOnce, "Bought")).toBeNull();
    const viewedNotBought = def({ type: "Or", id: "or", children: ["v", "n"] } as SegmentNode, [
      performed("v", "Viewed", ">="),
      performed("n", "Bought", "<"),
    ]);
    expect(only(viewedNotBought, "Viewed")).toBe("enter");
    expect(only(viewedNotBought, "Bought")).toBe("exit");
    expect(only(viewedNotBought, "Viewed", "Bought")).toBeNull();
  });
});

describe("a segment's scope in a drained batch", () => {
  const scope = (d: SegmentDefinition, rows: { ids: string[]; keys: string[] }[], created: string[] = []) => {
    const s = segmentScope(d, segmentDependencies(d), rows, created, [...new Set(rows.flatMap((r) => r.ids))]);
    return { all: s.all.sort(), enter: s.enter.sort(), exit: s.exit.sort() };
  };

  it("takes the ids of the rows meeting its keys, by what their changes can do", () => {
    const rows = [
      { ids: ["ann", "bob"], keys: ["e:Bought"] },
      { ids: ["cy"], keys: ["t:plan"] },
      { ids: ["dee"], keys: ["e:Browsed"] },
    ];
    expect(scope(proBuyers, rows)).toEqual({ all: ["cy"], enter: ["ann", "bob"], exit: [] });
    expect(scope(def(bought), rows)).toEqual({ all: [], enter: ["ann", "bob"], exit: [] });
  });

  it("evaluates an id whatever its membership when its rows say different things, in either order", () => {
    const bought = { ids: ["ann"], keys: ["e:Bought"] };
    const plan = { ids: ["ann"], keys: ["t:plan"] };
    expect(scope(proBuyers, [bought, plan])).toEqual({ all: ["ann"], enter: [], exit: [] });
    expect(scope(proBuyers, [plan, bought])).toEqual({ all: ["ann"], enter: [], exit: [] });
    const viewedNotBought = def({ type: "Or", id: "or", children: ["v", "n"] } as SegmentNode, [
      performed("v", "Viewed", ">="),
      performed("n", "Bought", "<"),
    ]);
    const viewed = { ids: ["ann"], keys: ["e:Viewed"] };
    expect(scope(viewedNotBought, [viewed, bought])).toEqual({ all: ["ann"], enter: [], exit: [] });
    expect(scope(viewedNotBought, [bought, viewed])).toEqual({ all: ["ann"], enter: [], exit: [] });
  });

  it("evaluates every id of a `*` row, and the created profiles of a segment that could hold with no data", () => {
    const rows = [
      { ids: ["ann"], keys: ["e:Bought"] },
      { ids: ["ann", "ann-anon"], keys: ["*", "e:Bought"] },
      { ids: ["bob"], keys: ["e:Browsed"] },
    ];
    expect(scope(neverBought, rows, ["bob"])).toEqual({ all: ["ann", "ann-anon", "bob"], enter: [], exit: [] });
    expect(scope(neverBought, [{ ids: ["cy"], keys: ["e:Bought"] }], ["dee"])).toEqual({ all: ["dee"], enter: [], exit: ["cy"] });
  });

  it("gives each segment of a batch its own scope, built once for segments meeting the batch's keys alike", () => {
    const rows = [
      { ids: ["ann", "bob"], keys: ["e:Bought"] },
      { ids: ["cy"], keys: ["t:plan"] },
      { ids: ["dee"], keys: ["t:country"] },
    ];
    const created = ["eve"];
    const everyone = ["ann", "bob", "cy", "dee", "eve"];
    const country = { type: "Trait", id: "c", path: "country", operator: { type: "Exists" } } as SegmentNode;
    const segments = [
      def(pro),
      def({ ...pro, operator: { type: "Equals", value: "free" } } as SegmentNode),
      def(bought),
      neverBought,
      proBuyers,
      // Meets the rows as `bought` does, and also takes the created profiles (it holds with no data: it depends on `*`).
      def({ type: "Or", id: "or", children: ["b", "n"] } as SegmentNode, [bought, performed("n", "Viewed", "<")]),
      def(country),
      def(performed("e", "Bought", "=")),
    ];
    const scopes = batchScopes(rows, created, everyone);
    const sorted = (s: { all: string[]; enter: string[]; exit: string[] }) => ({
      all: [...s.all].sort(),
      enter: [...s.enter].sort(),
      exit: [...s.exit].sort(),
    });
    // Each as if it were the batch's only segment, in either order.
    for (const order of [segments, [...segments].reverse()]) {
      const shared = batchScopes(rows, created, everyone);
      for (const d of order) {
        expect(sorted(shared(d, segmentDependencies(d)))).toEqual(sorted(segmentScope(d, segmentDependencies(d), rows, created, everyone)));
      }
    }
    // The two plan segments meet the batch alike: one scope for both.
    expect(scopes(segments[0]!, segmentDependencies(segments[0]!))).toBe(scopes(segments[1]!, segmentDependencies(segments[1]!)));
    expect(sorted(scopes(segments[5]!, segmentDependencies(segments[5]!)))).toEqual({ all: ["eve"], enter: ["ann", "bob"], exit: [] });
  });
});
