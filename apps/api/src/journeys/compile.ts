// Compiles the editor graph (draft) into the executable definition, one step at a time with the
// compiler of its kind (compile-nodes.ts). A step's next node is found by following its outgoing
// edge through label and empty nodes; branching steps name the label node that starts each branch.
// Three outcomes: compiled, incomplete (something is not filled in yet: the draft is stored as is)
// or contradictory (400).
import { EXIT_NODE_ID, type ErrorIssue, JourneyDefinition, type JourneyDraft } from "@tidings/schema";
import { type BodyNodeInput, compileNode, type EntryNodeInput } from "./compile-nodes.ts";
import { draftGraph, nodePath, type Problem, propsPath } from "./draft-graph.ts";

type Path = (string | number)[];

export type CompileResult =
  | { kind: "compiled"; definition: JourneyDefinition; draftPath: (definitionPath: Path) => string }
  | { kind: "incomplete"; issues: ErrorIssue[] }
  | { kind: "invalid"; issues: ErrorIssue[] };

/** Definition field → draft field (relative to `nodeTypeProps`); "" drops the rest of the path. */
const draftFields: Record<(EntryNodeInput | BodyNodeInput)["type"], Record<string, string>> = {
  EntryNode: { segment: "variant.segment", event: "variant.event", child: "variant.child" },
  EventEntryNode: { segment: "variant.segment", event: "variant.event", child: "variant.child" },
  DelayNode: { child: "" },
  MessageNode: { child: "" },
  SegmentSplitNode: { segment: "segmentId", trueChild: "trueLabelNodeId", falseChild: "falseLabelNodeId" },
  WaitForNode: { timeoutChild: "timeoutLabelNodeId", child: "labelNodeId" },
  RandomCohortNode: { children: "cohortChildren", child: "labelNodeId" },
};

/** A compiled node and the draft index of the step it came from. */
type Placed<T> = { node: T; index: number };

export function compileDraft(draft: JourneyDraft): CompileResult {
  const graph = draftGraph(draft);
  const problems: Problem[] = [...graph.problems];
  let entry: Placed<EntryNodeInput> | undefined;
  const nodes: Placed<BodyNodeInput>[] = [];
  for (const { node, index } of graph.steps) {
    const result = compileNode(graph, node, index);
    if ("problems" in result) problems.push(...result.problems);
    else if (result.compiled && "entryNode" in result.compiled) entry = { node: result.compiled.entryNode, index };
    else if (result.compiled) nodes.push({ node: result.compiled.node, index });
  }

  const issuesOf = (kind: Problem["kind"]) => problems.filter((p) => p.kind === kind).map((p) => p.issue);
  const contradictions = issuesOf("contradiction");
  if (contradictions.length > 0) return { kind: "invalid", issues: contradictions };
  const lacking = issuesOf("missing");
  if (lacking.length > 0) return { kind: "incomplete", issues: lacking };

  const draftPath = (path: Path): string => {
    const [head, ...rest] = path;
    const placed =
      head === "entryNode" ? entry : head === "nodes" && typeof rest[0] === "number" ? nodes[rest.shift() as number] : undefined;
    if (placed === undefined) return "draft";
    if (rest[0] === "id") return `${nodePath(placed.index)}.id`;
    const names = draftFields[placed.node.type];
    const fields: string[] = [];
    for (const part of rest) {
      const renamed = typeof part === "string" ? names[part] : undefined;
      if (renamed === "") break;
      fields.push(renamed ?? String(part));
    }
    return fields.length > 0 ? propsPath(placed.index, fields.join(".")) : nodePath(placed.index);
  };

  const raw = { entryNode: entry?.node, nodes: nodes.map((n) => n.node), exitNode: { type: "ExitNode", id: EXIT_NODE_ID } };
  const parsed = JourneyDefinition.safeParse(raw);
  if (!parsed.success) {
    return {
      kind: "invalid",
      issues: parsed.error.issues.map((issue) => ({ path: draftPath(issue.path as Path), message: issue.message })),
    };
  }
  return { kind: "compiled", definition: parsed.data, draftPath };
}
