// A journey definition laid out as a graph (dagre): its entry, its nodes and ExitNode, top to bottom.
import dagre from "@dagrejs/dagre";
import { type JourneyDefinition, journeyNodeChildren } from "@tidings/schema";

export const NODE_W = 236;
export const NODE_H = 92;

export interface Placed {
  id: string;
  type: string;
  /** What the node does, in a few words (its template, delay, segment). */
  detail: string;
  x: number;
  y: number;
}

export interface Laid {
  nodes: Placed[];
  edges: { from: string; to: string; points: { x: number; y: number }[] }[];
  width: number;
  height: number;
}

const ENTRY = "entry";

function detailOf(node: Record<string, unknown>, templateNames: Map<string, string>): string {
  if (typeof node.templateId === "string") return templateNames.get(node.templateId) ?? node.templateId;
  if (typeof node.event === "string") return `on "${node.event}"`;
  const variant = node.variant as { type?: string; seconds?: number } | undefined;
  if (variant?.type === "Second" && typeof variant.seconds === "number") return `wait ${variant.seconds} s`;
  if (variant?.type) return variant.type;
  if (typeof node.segment === "string") return "segment";
  return "";
}

export function layout(definition: JourneyDefinition, templateNames: Map<string, string>): Laid {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: "TB", nodesep: 40, ranksep: 50, marginx: 10, marginy: 10 });
  g.setDefaultEdgeLabel(() => ({}));
  const types = new Map<string, { type: string; detail: string }>();
  const add = (id: string, type: string, detail: string) => {
    types.set(id, { type, detail });
    g.setNode(id, { width: NODE_W, height: NODE_H });
  };
  add(ENTRY, definition.entryNode.type, detailOf(definition.entryNode as Record<string, unknown>, templateNames));
  for (const n of definition.nodes) add(n.id, n.type, detailOf(n as Record<string, unknown>, templateNames));
  add("ExitNode", "ExitNode", "");
  for (const c of journeyNodeChildren(definition.entryNode)) g.setEdge(ENTRY, c.id);
  for (const n of definition.nodes) for (const c of journeyNodeChildren(n)) g.setEdge(n.id, c.id);
  dagre.layout(g);
  const graph = g.graph();
  return {
    nodes: g.nodes().map((id) => {
      const at = g.node(id);
      const t = types.get(id)!;
      return { id, type: t.type, detail: t.detail, x: at.x - NODE_W / 2, y: at.y - NODE_H / 2 };
    }),
    edges: g.edges().map((e) => ({ from: e.v, to: e.w, points: g.edge(e).points ?? [] })),
    width: graph.width ?? NODE_W,
    height: graph.height ?? NODE_H,
  };
}
