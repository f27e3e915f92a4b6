// Compiles the editor graph (draft) into the executable definition. A step's next node is found
// by following its outgoing edge through label and empty nodes; branching steps name the label
// node that starts each branch. Three outcomes: compiled, incomplete (something is not filled in
// yet: the draft is stored as is) or contradictory (400).
import {
  EXIT_NODE_ID,
  type ErrorIssue,
  JourneyDefinition,
  type JourneyDraft,
  type JourneyUiDraftNode,
  type JourneyUiNodeTypeProps,
} from "@tidings/schema";

type Path = (string | number)[];

export type CompileResult =
  | { kind: "compiled"; definition: JourneyDefinition; draftPath: (definitionPath: Path) => string }
  | { kind: "incomplete"; issues: ErrorIssue[] }
  | { kind: "invalid"; issues: ErrorIssue[] };

/** Definition field → draft field (relative to `nodeTypeProps`); "" drops the rest of the path. */
const fieldNames: Record<string, Record<string, string>> = {
  EntryNode: { segment: "variant.segment", event: "variant.event", child: "variant.child" },
  EventEntryNode: { segment: "variant.segment", event: "variant.event", child: "variant.child" },
  DelayNode: { child: "" },
  MessageNode: { child: "" },
  SegmentSplitNode: { segment: "segmentId", trueChild: "trueLabelNodeId", falseChild: "falseLabelNodeId" },
  WaitForNode: { timeoutChild: "timeoutLabelNodeId", child: "labelNodeId" },
  RandomCohortNode: { children: "cohortChildren", child: "labelNodeId" },
};

class Problems {
  missing: ErrorIssue[] = [];
  contradictions: ErrorIssue[] = [];
}

const propsPath = (index: number, field?: string) =>
  `draft.nodes.${index}.data.nodeTypeProps${field ? `.${field}` : ""}`;

type DefinitionUiNode = JourneyUiDraftNode & {
  data: { type: "JourneyUiNodeDefinitionProps"; nodeTypeProps: JourneyUiNodeTypeProps };
};
const isDefinitionNode = (n: JourneyUiDraftNode): n is DefinitionUiNode => n.data.type === "JourneyUiNodeDefinitionProps";

export function compileDraft(draft: JourneyDraft): CompileResult {
  const problems = new Problems();
  const indexOf = new Map<string, number>();
  draft.nodes.forEach((n, i) => {
    if (indexOf.has(n.id)) {
      problems.contradictions.push({ path: `draft.nodes.${i}.id`, message: `duplicate node id "${n.id}" (also draft.nodes.${indexOf.get(n.id)})` });
    } else indexOf.set(n.id, i);
  });
  const outgoing = new Map<string, string[]>();
  for (const e of draft.edges) outgoing.set(e.source, [...(outgoing.get(e.source) ?? []), e.target]);

  const ofType = (type: string) =>
    draft.nodes.flatMap((n, i) => (isDefinitionNode(n) && n.data.nodeTypeProps.type === type ? [i] : []));
  const entries = ofType("EntryUiNode");
  const exits = ofType("ExitNode");
  for (const [found, what] of [
    [entries, "entry node (EntryUiNode)"],
    [exits, "exit node (ExitNode)"],
  ] as const) {
    if (found.length === 0) problems.missing.push({ path: "draft.nodes", message: `the draft has no ${what}` });
    for (const i of found.slice(1)) problems.contradictions.push({ path: `draft.nodes.${i}`, message: `a second ${what}` });
  }
  const exitId = exits.length === 1 ? draft.nodes[exits[0]!]!.id : undefined;

  /** The definition node a branch reaches, starting at `start` (itself, or through label/empty nodes). */
  const resolve = (start: string, from: string): string | undefined => {
    const seen = new Set<string>();
    let id = start;
    for (;;) {
      const i = indexOf.get(id);
      if (i === undefined) {
        problems.missing.push({ path: from, message: `leads to "${id}", which is not a node of the draft` });
        return undefined;
      }
      const node = draft.nodes[i]!;
      if (isDefinitionNode(node)) {
        if (node.data.nodeTypeProps.type === "EntryUiNode") {
          problems.contradictions.push({ path: from, message: "leads back to the entry node" });
          return undefined;
        }
        return id === exitId ? EXIT_NODE_ID : id;
      }
      if (seen.has(id)) {
        problems.contradictions.push({ path: `draft.nodes.${i}`, message: "edges loop through label/empty nodes without reaching a step" });
        return undefined;
      }
      seen.add(id);
      const next = wayOn(id, `draft.nodes.${i}`);
      if (next === undefined) return undefined;
      id = next;
    }
  };

  /** The one outgoing edge's target of a node. */
  const wayOn = (id: string, at: string, fallback?: string): string | undefined => {
    const targets = outgoing.get(id) ?? [];
    if (targets.length > 1) {
      problems.contradictions.push({ path: at, message: `has ${targets.length} outgoing edges; exactly one is expected` });
      return undefined;
    }
    const target = targets[0] ?? fallback;
    if (target === undefined) problems.missing.push({ path: at, message: "has no outgoing edge" });
    return target;
  };

  const next = (node: JourneyUiDraftNode, i: number, fallback?: string) => {
    const target = wayOn(node.id, `draft.nodes.${i}`, fallback);
    return target === undefined ? undefined : resolve(target, `draft.nodes.${i}`);
  };
  const branch = (labelId: string, i: number, field: string) => resolve(labelId, propsPath(i, field));
  const need = <T>(value: T | undefined, i: number, field: string): T | undefined => {
    if (value === undefined || value === "") problems.missing.push({ path: propsPath(i, field), message: "not filled in yet" });
    return value;
  };

  let entryNode: unknown;
  const nodes: unknown[] = [];
  draft.nodes.forEach((node, i) => {
    if (!isDefinitionNode(node) || indexOf.get(node.id) !== i) return;
    const p = node.data.nodeTypeProps;
    switch (p.type) {
      case "EntryUiNode": {
        const v = p.variant;
        const child = next(node, i, v.child);
        entryNode =
          v.type === "EntryNode"
            ? { type: v.type, segment: need(v.segment, i, "variant.segment"), child }
            : { type: v.type, event: need(v.event, i, "variant.event"), child };
        break;
      }
      case "ExitNode":
        break;
      case "DelayNode": {
        const v = p.variant;
        const required = v.type === "Second" ? ["seconds"] : v.type === "LocalTime" ? ["hour"] : ["userProperty"];
        for (const f of required) need((v as Record<string, unknown>)[f], i, `variant.${f}`);
        // Only the variant's own fields: editor state kept next to them stays in the draft.
        const variant =
          v.type === "Second"
            ? { type: v.type, seconds: v.seconds }
            : v.type === "LocalTime"
              ? { type: v.type, hour: v.hour, minute: v.minute }
              : { type: v.type, userProperty: v.userProperty, offsetSeconds: v.offsetSeconds };
        nodes.push({ id: node.id, type: p.type, variant, child: next(node, i) });
        break;
      }
      case "MessageNode":
        nodes.push({
          id: node.id,
          type: p.type,
          name: p.name,
          channel: p.channel,
          templateId: need(p.templateId, i, "templateId"),
          subscriptionGroupId: p.subscriptionGroupId || undefined,
          child: next(node, i),
        });
        break;
      case "SegmentSplitNode":
        nodes.push({
          id: node.id,
          type: p.type,
          name: p.name,
          segment: need(p.segmentId, i, "segmentId"),
          trueChild: branch(p.trueLabelNodeId, i, "trueLabelNodeId"),
          falseChild: branch(p.falseLabelNodeId, i, "falseLabelNodeId"),
        });
        break;
      case "WaitForNode":
        if (p.segmentChildren.length === 0) problems.missing.push({ path: propsPath(i, "segmentChildren"), message: "no segment to wait for yet" });
        nodes.push({
          id: node.id,
          type: p.type,
          name: p.name,
          segmentChildren: p.segmentChildren.map((c, k) => ({
            segmentId: need(c.segmentId, i, `segmentChildren.${k}.segmentId`),
            child: branch(c.labelNodeId, i, `segmentChildren.${k}.labelNodeId`),
          })),
          timeoutSeconds: need(p.timeoutSeconds, i, "timeoutSeconds"),
          timeoutChild: branch(p.timeoutLabelNodeId, i, "timeoutLabelNodeId"),
        });
        break;
      case "RandomCohortNode":
        if (p.cohortChildren.length === 0) problems.missing.push({ path: propsPath(i, "cohortChildren"), message: "no branch yet" });
        nodes.push({
          id: node.id,
          type: p.type,
          name: p.name,
          children: p.cohortChildren.map((c, k) => ({
            percent: need(c.percent, i, `cohortChildren.${k}.percent`),
            child: branch(c.labelNodeId, i, `cohortChildren.${k}.labelNodeId`),
            name: c.name,
          })),
        });
        break;
    }
  });

  if (problems.contradictions.length > 0) return { kind: "invalid", issues: problems.contradictions };
  if (problems.missing.length > 0) return { kind: "incomplete", issues: problems.missing };

  const raw = { entryNode, nodes, exitNode: { type: "ExitNode", id: EXIT_NODE_ID } };
  const draftPath = (path: Path): string => {
    const [head, ...rest] = path;
    let nodeId: string | undefined;
    let type: string | undefined;
    if (head === "entryNode") {
      nodeId = draft.nodes[entries[0]!]!.id;
      type = (entryNode as { type: string }).type;
    } else if (head === "nodes" && typeof rest[0] === "number") {
      const n = nodes[rest.shift() as number] as { id: string; type: string } | undefined;
      nodeId = n?.id;
      type = n?.type;
    }
    const i = nodeId === undefined ? undefined : indexOf.get(nodeId);
    if (i === undefined || type === undefined) return "draft";
    if (rest[0] === "id") return `draft.nodes.${i}.id`;
    const names = fieldNames[type] ?? {};
    const fields: string[] = [];
    for (const part of rest) {
      const renamed = typeof part === "string" ? names[part] : undefined;
      if (renamed === "") break;
      fields.push(renamed ?? String(part));
    }
    return fields.length > 0 ? propsPath(i, fields.join(".")) : `draft.nodes.${i}`;
  };

  const parsed = JourneyDefinition.safeParse(raw);
  if (!parsed.success) {
    return { kind: "invalid", issues: parsed.error.issues.map((issue) => ({ path: draftPath(issue.path as Path), message: issue.message })) };
  }
  return { kind: "compiled", definition: parsed.data, draftPath };
}
