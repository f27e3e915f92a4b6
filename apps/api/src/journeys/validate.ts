// Checks a journey's definition against the workspace (the structure is checked by the schema)
// and its status changes.
import type { JourneyDefinition, JourneyStatus } from "@tidings/schema";
import type { PrismaClient } from "../db/client.ts";
import { badRequest } from "../http/errors.ts";

type Path = (string | number)[];
export interface DefinitionIssue {
  path: Path;
  message: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The tables a definition refers to; a transaction client will do. */
export type ReferenceReader = Pick<PrismaClient, "segment" | "messageTemplate" | "subscriptionGroup">;

/**
 * Segments, templates and subscription groups the definition names must exist in the workspace;
 * a message node's template (when it has a definition) and subscription group must be of the
 * node's channel. Returns one issue per problem, paths relative to the definition.
 */
export async function referenceIssues(
  prisma: ReferenceReader,
  workspaceId: string,
  def: JourneyDefinition,
): Promise<DefinitionIssue[]> {
  const segments: { id: string; path: Path }[] = [];
  const templates: { id: string; path: Path; channel: string }[] = [];
  const groups: { id: string; path: Path; channel: string }[] = [];
  if (def.entryNode.type === "EntryNode") segments.push({ id: def.entryNode.segment, path: ["entryNode", "segment"] });
  def.nodes.forEach((n, i) => {
    const at: Path = ["nodes", i];
    if (n.type === "SegmentSplitNode") segments.push({ id: n.segment, path: [...at, "segment"] });
    if (n.type === "WaitForNode") {
      n.segmentChildren.forEach((c, k) => segments.push({ id: c.segmentId, path: [...at, "segmentChildren", k, "segmentId"] }));
    }
    if (n.type === "MessageNode") {
      templates.push({ id: n.templateId, path: [...at, "templateId"], channel: n.channel });
      if (n.subscriptionGroupId) groups.push({ id: n.subscriptionGroupId, path: [...at, "subscriptionGroupId"], channel: n.channel });
    }
  });

  const idsOf = (refs: { id: string }[]) => [...new Set(refs.map((r) => r.id).filter((id) => UUID.test(id)))];
  const [segmentRows, templateRows, groupRows] = await Promise.all([
    segments.length ? prisma.segment.findMany({ where: { workspaceId, id: { in: idsOf(segments) } }, select: { id: true } }) : [],
    templates.length
      ? prisma.messageTemplate.findMany({ where: { workspaceId, id: { in: idsOf(templates) } }, select: { id: true, definition: true } })
      : [],
    groups.length
      ? prisma.subscriptionGroup.findMany({ where: { workspaceId, id: { in: idsOf(groups) } }, select: { id: true, channel: true } })
      : [],
  ]);

  const issues: DefinitionIssue[] = [];
  const knownSegments = new Set(segmentRows.map((r) => r.id));
  for (const s of segments) {
    if (!knownSegments.has(s.id)) issues.push({ path: s.path, message: `no segment ${s.id} in this workspace` });
  }
  const templateChannel = new Map(
    templateRows.map((r) => [r.id, (r.definition as { type?: string } | null)?.type] as const),
  );
  for (const t of templates) {
    if (!templateChannel.has(t.id)) issues.push({ path: t.path, message: `no message template ${t.id} in this workspace` });
    else {
      const channel = templateChannel.get(t.id);
      if (channel && channel !== t.channel) {
        issues.push({ path: t.path, message: `template ${t.id} is a ${channel} template; the node sends ${t.channel}` });
      }
    }
  }
  const groupChannel = new Map(groupRows.map((r) => [r.id, r.channel as string]));
  for (const g of groups) {
    const channel = groupChannel.get(g.id);
    if (channel === undefined) issues.push({ path: g.path, message: `no subscription group ${g.id} in this workspace` });
    else if (channel !== g.channel) {
      issues.push({ path: g.path, message: `subscription group ${g.id} is for ${channel}; the node sends ${g.channel}` });
    }
  }
  return issues;
}

const allowed: Record<JourneyStatus, JourneyStatus[]> = {
  NotStarted: ["NotStarted", "Running"],
  Running: ["Running", "Paused"],
  Paused: ["Paused", "Running"],
};

/** NotStarted → Running ⇄ Paused; throws 400 for anything else. */
export function assertStatusChange(from: JourneyStatus, to: JourneyStatus) {
  if (allowed[from].includes(to)) return;
  const why =
    to === "NotStarted"
      ? "a journey that has started cannot go back to NotStarted"
      : "only a running journey can be paused";
  throw badRequest(`Status cannot change from ${from} to ${to}`, [{ path: "status", message: why }]);
}
