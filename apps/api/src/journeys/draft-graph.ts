// A read-only view of an editor draft, built once per compilation: nodes by id, the targets of
// each node's edges, and the step a reference reaches once label and empty nodes are followed.
import { EXIT_NODE_ID, type ErrorIssue, type JourneyDraft, type JourneyUiDraftNode, type JourneyUiNodeTypeProps } from "@tidings/schema";

/** Something not filled in yet (the draft is stored as is) or a contradiction (400). */
export interface Problem {
  kind: "missing" | "contradiction";
  issue: ErrorIssue;
}
export const missing = (path: string, message: string): Problem => ({ kind: "missing", issue: { path, message } });
export const contradiction = (path: string, message: string): Problem => ({ kind: "contradiction", issue: { path, message } });

/** A node id reached by following edges, or why there is none. */
export type Reached = { id: string } | { problem: Problem };

export const nodePath = (index: number) => `draft.nodes.${index}`;
export const propsPath = (index: number, field: string) => `draft.nodes.${index}.data.nodeTypeProps.${field}`;

export type StepUiNode = JourneyUiDraftNode & {
  data: { type: "JourneyUiNodeDefinitionProps"; nodeTypeProps: JourneyUiNodeTypeProps };
};
const isStep = (n: JourneyUiDraftNode): n is StepUiNode => n.data.type === "JourneyUiNodeDefinitionProps";

export interface DraftGraph {
  /** The nodes that stand for a step, in draft order; of nodes sharing an id only the first. */
  readonly steps: readonly { node: StepUiNode; index: number }[];
  /** Duplicate ids, and an entry or exit node missing or repeated. */
  readonly problems: readonly Problem[];
  /** The step after node `id` (at `at`): its one outgoing edge, else `fallback`, then as `land`. */
  next(id: string, at: string, fallback?: string): Reached;
  /** The step `start` is or leads to through label and empty nodes (`ExitNode` for the exit); `from` refers to it. */
  land(start: string, from: string): Reached;
}

export function draftGraph(draft: JourneyDraft): DraftGraph {
  const problems: Problem[] = [];
  const indexOf = new Map<string, number>();
  draft.nodes.forEach((n, i) => {
    const first = indexOf.get(n.id);
    if (first === undefined) indexOf.set(n.id, i);
    else problems.push(contradiction(`${nodePath(i)}.id`, `duplicate node id "${n.id}" (also ${nodePath(first)})`));
  });
  const outgoing = new Map<string, string[]>();
  for (const e of draft.edges) outgoing.set(e.source, [...(outgoing.get(e.source) ?? []), e.target]);

  // Counted over every node, repeated ids included.
  const ofKind = (kind: string) => draft.nodes.flatMap((n, i) => (isStep(n) && n.data.nodeTypeProps.type === kind ? [i] : []));
  const exits = ofKind("ExitNode");
  for (const [found, what] of [
    [ofKind("EntryUiNode"), "entry node (EntryUiNode)"],
    [exits, "exit node (ExitNode)"],
  ] as const) {
    if (found.length === 0) problems.push(missing("draft.nodes", `the draft has no ${what}`));
    for (const i of found.slice(1)) problems.push(contradiction(nodePath(i), `a second ${what}`));
  }
  const exitId = exits.length === 1 ? draft.nodes[exits[0]!]!.id : undefined;

  const edgeTarget = (id: string, at: string, fallback?: string): Reached => {
    const targets = outgoing.get(id) ?? [];
    if (targets.length > 1) return { problem: contradiction(at, `has ${targets.length} outgoing edges; exactly one is expected`) };
    const target = targets[0] ?? fallback;
    return target === undefined ? { problem: missing(at, "has no outgoing edge") } : { id: target };
  };

  const land = (start: string, from: string): Reached => {
    const seen = new Set<string>();
    for (let id = start; ; ) {
      const i = indexOf.get(id);
      if (i === undefined) return { problem: missing(from, `leads to "${id}", which is not a node of the draft`) };
      const node = draft.nodes[i]!;
      if (isStep(node)) {
        if (node.data.nodeTypeProps.type === "EntryUiNode") return { problem: contradiction(from, "leads back to the entry node") };
        return { id: id === exitId ? EXIT_NODE_ID : id };
      }
      if (seen.has(id)) {
        return { problem: contradiction(nodePath(i), "edges loop through label/empty nodes without reaching a step") };
      }
      seen.add(id);
      const way = edgeTarget(id, nodePath(i));
      if ("problem" in way) return way;
      id = way.id;
    }
  };

  return {
    steps: draft.nodes.flatMap((node, index) => (isStep(node) && indexOf.get(node.id) === index ? [{ node, index }] : [])),
    problems,
    next: (id, at, fallback) => {
      const way = edgeTarget(id, at, fallback);
      return "problem" in way ? way : land(way.id, at);
    },
    land,
  };
}
