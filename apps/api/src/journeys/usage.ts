// What a journey uses: the segments, templates and subscription groups its definition names,
// each with where it is named. validate.ts checks them; a running journey holds them
// (src/db/references.ts), which is what a DELETE or a change of one of them looks up.
import type { Channel, JourneyDefinition } from "@tidings/schema";
import type { Target } from "../db/references.ts";

export type Path = (string | number)[];

export interface JourneyUse extends Target {
  /** Where the definition names it (relative to the definition). */
  path: Path;
  /** For a message node's template and subscription group: the channel the node sends on. */
  channel?: Channel;
}

export function journeyUses(def: JourneyDefinition): JourneyUse[] {
  const uses: JourneyUse[] = [];
  if (def.entryNode.type === "EntryNode") uses.push({ kind: "Segment", id: def.entryNode.segment, path: ["entryNode", "segment"] });
  def.nodes.forEach((n, i) => {
    const at: Path = ["nodes", i];
    if (n.type === "SegmentSplitNode") uses.push({ kind: "Segment", id: n.segment, path: [...at, "segment"] });
    if (n.type === "WaitForNode") {
      for (const [k, c] of n.segmentChildren.entries()) {
        uses.push({ kind: "Segment", id: c.segmentId, path: [...at, "segmentChildren", k, "segmentId"] });
      }
    }
    if (n.type === "MessageNode") {
      uses.push({ kind: "MessageTemplate", id: n.templateId, path: [...at, "templateId"], channel: n.channel });
      if (n.subscriptionGroupId) {
        uses.push({ kind: "SubscriptionGroup", id: n.subscriptionGroupId, path: [...at, "subscriptionGroupId"], channel: n.channel });
      }
    }
  });
  return uses;
}
