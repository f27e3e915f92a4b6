// One compiler per kind of editor step: the definition node it stands for, read from its props
// and, for the nodes that follow it, from the draft graph. Only fields the definition knows are
// copied, so editor state kept in the draft never reaches the definition.
import type { DelayVariant, JourneyBodyNode, JourneyEntryNode, JourneyUiNodeTypeProps } from "@tidings/schema";
import type { z } from "zod";
import { type DraftGraph, missing, nodePath, type Problem, propsPath, type Reached, type StepUiNode } from "./draft-graph.ts";

export type StepKind = JourneyUiNodeTypeProps["type"];
type PropsOf<K extends StepKind> = Extract<JourneyUiNodeTypeProps, { type: K }>;

// Input types: fields with a default (a delay's `minute`, `offsetSeconds`) may be left out, and
// get the default when the definition is parsed.
export type EntryNodeInput = z.input<typeof JourneyEntryNode>;
export type BodyNodeInput = z.input<typeof JourneyBodyNode>;

/** What a step compiles to; the exit node compiles to nothing, the definition has a fixed one. */
export type CompiledNode = { entryNode: EntryNodeInput } | { node: BodyNodeInput } | null;

/**
 * What a compiler reads besides the step's props. Problems found are kept for the step and the
 * step is then left out, so the values returned on a problem (absent, or "") are never used.
 */
export interface NodeScope {
  readonly id: string;
  /** The step after this one: its one outgoing edge (else `fallback`), through label and empty nodes. */
  next(fallback?: string): string;
  /** The step a branch reaches from its label node; `field` is the props field naming that label. */
  branch(labelId: string, field: string): string;
  /** A props field that must be filled in (present and not ""). */
  need<T>(value: T | undefined, field: string): T;
  /** Something at props field `field` that is not filled in yet. */
  lacks(field: string, message: string): void;
}

export type NodeCompiler<K extends StepKind> = (props: PropsOf<K>, at: NodeScope) => CompiledNode;

function delayVariant(v: PropsOf<"DelayNode">["variant"], at: NodeScope): z.input<typeof DelayVariant> {
  switch (v.type) {
    case "Second":
      return { type: v.type, seconds: at.need(v.seconds, "variant.seconds") };
    case "LocalTime":
      return { type: v.type, hour: at.need(v.hour, "variant.hour"), minute: v.minute };
    case "UserProperty":
      return { type: v.type, userProperty: at.need(v.userProperty, "variant.userProperty"), offsetSeconds: v.offsetSeconds };
  }
}

/** Keyed by `nodeTypeProps.type`: a kind of step without a compiler does not type-check. */
export const nodeCompilers: { [K in StepKind]: NodeCompiler<K> } = {
  EntryUiNode: ({ variant: v }, at) => {
    // The way on first: its problems are listed before the variant's.
    const child = at.next(v.child);
    return {
      entryNode:
        v.type === "EntryNode"
          ? { type: v.type, segment: at.need(v.segment, "variant.segment"), child }
          : { type: v.type, event: at.need(v.event, "variant.event"), child },
    };
  },
  ExitNode: () => null,
  DelayNode: (p, at) => ({ node: { id: at.id, type: p.type, variant: delayVariant(p.variant, at), child: at.next() } }),
  MessageNode: (p, at) => ({
    node: {
      id: at.id,
      type: p.type,
      name: p.name,
      channel: p.channel,
      templateId: at.need(p.templateId, "templateId"),
      subscriptionGroupId: p.subscriptionGroupId || undefined,
      ...(typeof p.category === "string" && p.category ? { category: p.category } : {}),
      ...(p.whenHeld === "skip" || p.whenHeld === "wait" ? { whenHeld: p.whenHeld } : {}),
      child: at.next(),
    },
  }),
  SegmentSplitNode: (p, at) => ({
    node: {
      id: at.id,
      type: p.type,
      name: p.name,
      segment: at.need(p.segmentId, "segmentId"),
      trueChild: at.branch(p.trueLabelNodeId, "trueLabelNodeId"),
      falseChild: at.branch(p.falseLabelNodeId, "falseLabelNodeId"),
    },
  }),
  WaitForNode: (p, at) => {
    if (p.segmentChildren.length === 0) at.lacks("segmentChildren", "no segment to wait for yet");
    return {
      node: {
        id: at.id,
        type: p.type,
        name: p.name,
        segmentChildren: p.segmentChildren.map((c, k) => ({
          segmentId: at.need(c.segmentId, `segmentChildren.${k}.segmentId`),
          child: at.branch(c.labelNodeId, `segmentChildren.${k}.labelNodeId`),
        })),
        timeoutSeconds: at.need(p.timeoutSeconds, "timeoutSeconds"),
        timeoutChild: at.branch(p.timeoutLabelNodeId, "timeoutLabelNodeId"),
      },
    };
  },
  RandomCohortNode: (p, at) => {
    if (p.cohortChildren.length === 0) at.lacks("cohortChildren", "no branch yet");
    return {
      node: {
        id: at.id,
        type: p.type,
        name: p.name,
        children: p.cohortChildren.map((c, k) => ({
          percent: at.need(c.percent, `cohortChildren.${k}.percent`),
          child: at.branch(c.labelNodeId, `cohortChildren.${k}.labelNodeId`),
          name: c.name,
        })),
      },
    };
  },
};

const compileProps = <K extends StepKind>(kind: K, props: PropsOf<K>, at: NodeScope) => nodeCompilers[kind](props, at);

/** Compiles the step at draft index `index`: its definition node, or every problem found in it. */
export function compileNode(graph: DraftGraph, node: StepUiNode, index: number): { compiled: CompiledNode } | { problems: Problem[] } {
  const problems: Problem[] = [];
  const reached = (r: Reached): string => {
    if (!("problem" in r)) return r.id;
    problems.push(r.problem);
    return "";
  };
  const scope: NodeScope = {
    id: node.id,
    next: (fallback) => reached(graph.next(node.id, nodePath(index), fallback)),
    branch: (labelId, field) => reached(graph.land(labelId, propsPath(index, field))),
    need: <T>(value: T | undefined, field: string) => {
      if (value === undefined || value === "") problems.push(missing(propsPath(index, field), "not filled in yet"));
      return value as T;
    },
    lacks: (field, message) => {
      problems.push(missing(propsPath(index, field), message));
    },
  };
  const props = node.data.nodeTypeProps;
  const compiled = compileProps(props.type, props, scope);
  return problems.length > 0 ? { problems } : { compiled };
}
