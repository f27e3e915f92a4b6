// Checks a journey's definition against the workspace (the structure is checked by the schema;
// status changes by the lifecycle, lifecycle.ts).
import type { JourneyDefinition } from "@tidings/schema";
import type { PrismaClient } from "../db/client.ts";
import { type JourneyUse, journeyUses, type Path } from "./usage.ts";

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
 * node's channel. For a journey about to run (`running`), each template must also have a
 * definition: that is what sends use. Returns one issue per problem, paths relative to the
 * definition. Inside a transaction, lock the targets first (lockTargets) to read them as they stay.
 */
export async function referenceIssues(
  prisma: ReferenceReader,
  workspaceId: string,
  def: JourneyDefinition,
  options: { running?: boolean } = {},
): Promise<DefinitionIssue[]> {
  const uses = journeyUses(def);
  const of = (kind: JourneyUse["kind"]) => uses.filter((u) => u.kind === kind);
  const [segments, templates, groups] = [of("Segment"), of("MessageTemplate"), of("SubscriptionGroup")];
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
  const templateChannel = new Map(templateRows.map((r) => [r.id, (r.definition as { type?: string } | null)?.type] as const));
  for (const t of templates) {
    if (!templateChannel.has(t.id)) issues.push({ path: t.path, message: `no message template ${t.id} in this workspace` });
    else {
      const channel = templateChannel.get(t.id);
      if (channel && channel !== t.channel) {
        issues.push({ path: t.path, message: `template ${t.id} is a ${channel} template; the node sends ${t.channel}` });
      } else if (!channel && options.running) {
        issues.push({
          path: t.path,
          message: `template ${t.id} has no definition (only a draft), and a running journey sends the definition`,
        });
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
