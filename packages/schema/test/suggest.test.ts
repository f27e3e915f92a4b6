import { describe, expect, it } from "vitest";
import { closestKey, closestNames, explainIssues, JourneyDefinition } from "../src/index.js";

describe("closestKey", () => {
  it("counts a swap of two neighbours as one edit, and ignores case and separators", () => {
    expect(closestKey("chlid", ["child", "id", "type"])).toBe("child");
    expect(closestKey("within_seconds", ["withinSeconds", "event"])).toBe("withinSeconds");
    expect(closestKey("wiat", ["wait", "send"])).toBe("wait");
  });

  it("suggests nothing when nothing is close", () => {
    expect(closestKey("colour", ["child", "type"])).toBeUndefined();
    expect(closestKey("ab", ["cd"])).toBeUndefined();
  });
});

describe("closestNames", () => {
  it("lists the nearest names first, and names that contain what was typed", () => {
    expect(closestNames("Welcom hook", ["Welcome hook", "Goodbye", "Welcome email"])).toEqual(["Welcome hook"]);
    expect(closestNames("Welcome", ["Welcome hook", "Goodbye"])).toEqual(["Welcome hook"]);
  });
});

describe("explainIssues", () => {
  it("reports a misspelt required key once, as the unknown key with the key it stands for", () => {
    const parsed = JourneyDefinition.safeParse({
      entryNode: { type: "EventEntryNode", event: "E", child: "wait" },
      nodes: [{ id: "wait", type: "DelayNode", variant: { type: "Second", seconds: 1 }, chlid: "ExitNode" }],
    });
    expect(parsed.success).toBe(false);
    expect(explainIssues(parsed.error!.issues, JourneyDefinition)).toEqual([
      { path: ["nodes", 0, "chlid"], message: 'unknown field "chlid" (did you mean "child"?)' },
    ]);
  });

  it("says a missing field is missing, once, and keeps other messages", () => {
    const parsed = JourneyDefinition.safeParse({
      entryNode: { type: "EventEntryNode", event: "E", child: "wait" },
      nodes: [{ id: "wait", type: "DelayNode", variant: { type: "Second", seconds: -1 } }],
    });
    const issues = explainIssues(parsed.error!.issues, JourneyDefinition);
    expect(issues).toContainEqual({ path: ["nodes", 0, "child"], message: "required, but missing" });
    expect(issues.filter((i) => i.path.join(".") === "nodes.0.child")).toHaveLength(1);
    expect(issues.some((i) => i.path.join(".") === "nodes.0.variant.seconds")).toBe(true);
  });
});
