// Builders for journey drafts and the resources they refer to (inserted directly with Prisma).
import { randomUUID } from "node:crypto";
import type { TestApp } from "../support/app.ts";
import { bearer, request } from "../support/http.ts";

export async function insertSegment(t: TestApp, workspaceId: string, name = `seg-${randomUUID()}`) {
  const row = await t.ctx.db.prisma.segment.create({
    data: { workspaceId, name, definition: { entryNode: { type: "Everyone", id: "e" }, nodes: [] } },
  });
  return row.id;
}

export async function insertTemplate(t: TestApp, workspaceId: string, type: "Email" | "Sms" = "Email") {
  const definition = type === "Email" ? { type, from: "a@example.com", subject: "Hi", body: "Hello {{ user.id }}" } : { type, body: "Hi" };
  const row = await t.ctx.db.prisma.messageTemplate.create({ data: { workspaceId, name: `tpl-${randomUUID()}`, definition } });
  return row.id;
}

export async function insertGroup(t: TestApp, workspaceId: string, channel: "Email" | "Sms" = "Email") {
  const row = await t.ctx.db.prisma.subscriptionGroup.create({
    data: { workspaceId, name: `grp-${randomUUID()}`, channel, type: "OptOut" },
  });
  return row.id;
}

export const uiNode = (id: string, nodeTypeProps: Record<string, unknown>) => ({
  id,
  data: { type: "JourneyUiNodeDefinitionProps", nodeTypeProps },
});
export const labelNode = (id: string, title: string) => ({ id, data: { type: "JourneyUiNodeLabelProps", title } });
export const emptyNode = (id: string) => ({ id, data: { type: "JourneyUiNodeEmptyProps" } });
export const edge = (source: string, target: string) => ({
  source,
  target,
  data: { type: "JourneyUiDefinitionEdgeProps" },
});

/**
 * entry → delay → segment split (true: message, false: straight on) → exit, as an editor draws it,
 * with the entry's and the delay's variants given.
 */
export function draft(v: {
  entry: Record<string, unknown>;
  delay: Record<string, unknown>;
  splitSegment: string;
  templateId: string;
  splitName?: string;
}) {
  return {
    nodes: [
      uiNode("EntryNode", { type: "EntryUiNode", variant: v.entry }),
      uiNode("delay-1", { type: "DelayNode", variant: v.delay }),
      uiNode("split-1", {
        type: "SegmentSplitNode",
        ...(v.splitName === undefined ? {} : { name: v.splitName }),
        segmentId: v.splitSegment,
        trueLabelNodeId: "split-1-true",
        falseLabelNodeId: "split-1-false",
      }),
      labelNode("split-1-true", "true"),
      labelNode("split-1-false", "false"),
      uiNode("msg-1", { type: "MessageNode", name: "Welcome", channel: "Email", templateId: v.templateId }),
      emptyNode("join-1"),
      uiNode("ExitNode", { type: "ExitNode" }),
    ] as Record<string, unknown>[],
    edges: [
      edge("EntryNode", "delay-1"),
      edge("delay-1", "split-1"),
      edge("split-1", "split-1-true"),
      edge("split-1", "split-1-false"),
      edge("split-1-true", "msg-1"),
      edge("msg-1", "join-1"),
      edge("split-1-false", "join-1"),
      edge("join-1", "ExitNode"),
    ],
  };
}

/** `draft` entering a segment, waiting an hour, splitting on "Is VIP?". */
export const fullDraft = (ids: { entrySegment: string; splitSegment: string; templateId: string }) =>
  draft({
    entry: { type: "EntryNode", segment: ids.entrySegment },
    delay: { type: "Second", seconds: 3600 },
    splitSegment: ids.splitSegment,
    templateId: ids.templateId,
    splitName: "Is VIP?",
  });

/** A valid definition: entry segment → message → exit. */
export const simpleDefinition = (segment: string, templateId: string) => ({
  entryNode: { type: "EntryNode", segment, child: "m" },
  nodes: [{ id: "m", type: "MessageNode", channel: "Email", templateId, child: "ExitNode" }],
  exitNode: { type: "ExitNode" },
});

export function putJourney(t: TestApp, body: Record<string, unknown>, key = t.workspace.adminKey) {
  return request(t.url, "PUT", "/api/admin/journeys", {
    headers: bearer(key),
    body: { workspaceId: t.workspace.id, name: `journey-${randomUUID()}`, ...body },
  });
}

export const issuePaths = (res: { body: { error?: { issues?: { path: string }[] } } }) => (res.body.error?.issues ?? []).map((i) => i.path);
