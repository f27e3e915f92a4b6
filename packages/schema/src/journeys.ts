// Journeys: the editor graph (`draft`), the executable `definition` compiled from it, and the
// admin wire shapes. The definition's structural checks live here so the server, the SDK and the
// CLI reject the same definitions with the same issue paths; references to other resources are
// checked by the server.
import { z } from "./zod.js";
import { MessageCategory } from "./categories.js";
import {
  DefinitionFailure,
  EpochMillis,
  idParams,
  ListQuery,
  listResponse,
  RequestWorkspaceId,
  resourceName,
  ServerManaged,
  serverManagedFields,
  WorkspaceId,
  WorkspaceQuery,
} from "./common.js";
import { Channel } from "./subscription-groups.js";
import { didYouMean } from "./suggest.js";

/** The id every exit reference names. */
export const EXIT_NODE_ID = "ExitNode";

const NodeId = z.string().min(1).max(200);
const ChildId = NodeId.describe("Id of the next node: a body node's `id` or `ExitNode`.");
const Seconds = z
  .number()
  .int()
  .min(0)
  .max(10 * 365 * 24 * 3600);

// --- Executable definition -------------------------------------------------------------------
// Strict at every level: a misspelt field is a 400 naming it, never a step silently changed.

export const SegmentEntryNode = z
  .strictObject({
    type: z.literal("EntryNode"),
    segment: z.uuid().describe("Segment id: users start a run when they enter this segment."),
    child: ChildId,
  })
  .describe("Starts a run when a user enters the segment.");

export const EventEntryNode = z
  .strictObject({
    type: z.literal("EventEntryNode"),
    event: z.string().min(1).max(200).describe("Track event name: users start a run when they send it."),
    child: ChildId,
  })
  .describe("Starts a run when a user sends the track event.");

export const JourneyEntryNode = z
  .discriminatedUnion("type", [SegmentEntryNode, EventEntryNode])
  .describe("Where runs start: on entering a segment (`EntryNode`) or on a track event (`EventEntryNode`).")
  .openapi("JourneyEntryNode");
export type JourneyEntryNode = z.infer<typeof JourneyEntryNode>;

export const SecondDelayVariant = z.strictObject({
  type: z.literal("Second"),
  seconds: Seconds.describe("Wait this many seconds."),
});
export const LocalTimeDelayVariant = z.strictObject({
  type: z.literal("LocalTime"),
  hour: z.number().int().min(0).max(23).describe("Wait until the next occurrence of this hour in the user's time zone."),
  minute: z.number().int().min(0).max(59).default(0).describe("Minute of that hour (default 0)."),
});
export const UserPropertyDelayVariant = z.strictObject({
  type: z.literal("UserProperty"),
  userProperty: z.string().min(1).max(200).describe("Dot path of a trait holding a date (ISO 8601 or epoch ms): wait until then."),
  offsetSeconds: z
    .number()
    .int()
    .min(-10 * 365 * 24 * 3600)
    .max(10 * 365 * 24 * 3600)
    .default(0)
    .describe("Added to that date, within ±10 years; negative to act before it (e.g. -86400: a day before)."),
});
export const DelayVariant = z
  .discriminatedUnion("type", [SecondDelayVariant, LocalTimeDelayVariant, UserPropertyDelayVariant])
  .describe("How long to wait.");
export type DelayVariant = z.infer<typeof DelayVariant>;

const bodyNode = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) =>
  z.strictObject({
    id: NodeId.describe("Node id, unique in the definition; `ExitNode` is reserved."),
    type: z.literal(type),
    name: z.string().max(200).optional().describe("Label shown in editors."),
    ...shape,
  });

export const DelayNode = bodyNode("DelayNode", { variant: DelayVariant, child: ChildId }).describe("Waits, then continues with `child`.");

export const SegmentSplitNode = bodyNode("SegmentSplitNode", {
  segment: z.uuid().describe("Segment id tested when the user reaches the node."),
  trueChild: ChildId.describe("Next node for members of the segment."),
  falseChild: ChildId.describe("Next node for everyone else."),
}).describe("Branches on segment membership.");

export const WaitForSegmentChild = z.strictObject({
  segmentId: z.uuid().describe("Segment id to wait for."),
  child: ChildId.describe("Next node once the user is in the segment."),
});

export const WaitForNode = bodyNode("WaitForNode", {
  segmentChildren: z
    .array(WaitForSegmentChild)
    .min(1)
    .max(20)
    .describe("Segments to wait for; the first one the user is in decides the branch."),
  timeoutSeconds: Seconds.positive().describe("Give up after this many seconds."),
  timeoutChild: ChildId.describe("Next node when the wait times out."),
}).describe("Waits until the user is in one of the segments, or the timeout.");

export const MessageNode = bodyNode("MessageNode", {
  channel: Channel,
  templateId: z.uuid().describe("Message template of the workspace; its `definition` is sent."),
  subscriptionGroupId: z.uuid().optional().describe("Subscription group of the same channel; users not subscribed are skipped."),
  category: MessageCategory.optional().describe("The message's category for delivery policies (default: the template's)."),
  whenHeld: z
    .enum(["wait", "skip"])
    .optional()
    .describe(
      "While the workspace has frequency caps or send windows, a run waits at this node until its message is decided (sent, failed or skipped). A message a rule holds: `wait` (default) keeps it Deferred and the run waiting; `skip` skips it and the run goes on.",
    ),
  child: ChildId,
}).describe("Sends a message (at most once per run), then continues with `child`.");

export const RandomCohortChild = z.strictObject({
  percent: z.number().gt(0).max(100).describe("Share of users taking this branch, in percent (0–100]."),
  child: ChildId,
  name: z.string().max(200).optional(),
});

export const RandomCohortNode = bodyNode("RandomCohortNode", {
  children: z.array(RandomCohortChild).min(1).max(20).describe("Branches; their `percent` values add up to 100 (percent, not fractions)."),
}).describe("Sends each user down one branch at random, with the given shares.");

export const JourneyBodyNode = z
  .discriminatedUnion("type", [DelayNode, SegmentSplitNode, WaitForNode, MessageNode, RandomCohortNode])
  .describe("A step of the journey; `type` selects its shape.")
  .openapi("JourneyBodyNode");
export type JourneyBodyNode = z.infer<typeof JourneyBodyNode>;

export const JourneyExitNode = z
  .strictObject({
    type: z.literal("ExitNode"),
    id: z.literal(EXIT_NODE_ID).default(EXIT_NODE_ID),
  })
  .describe("Where every run ends; children name it as `ExitNode`.");

type Path = (string | number)[];

/** Children of a node, each with its path relative to the node. */
export function journeyNodeChildren(n: JourneyEntryNode | JourneyBodyNode): { id: string; path: Path }[] {
  switch (n.type) {
    case "EntryNode":
    case "EventEntryNode":
    case "DelayNode":
    case "MessageNode":
      return [{ id: n.child, path: ["child"] }];
    case "SegmentSplitNode":
      return [
        { id: n.trueChild, path: ["trueChild"] },
        { id: n.falseChild, path: ["falseChild"] },
      ];
    case "WaitForNode":
      return [
        ...n.segmentChildren.map((c, i) => ({ id: c.child, path: ["segmentChildren", i, "child"] })),
        { id: n.timeoutChild, path: ["timeoutChild"] },
      ];
    case "RandomCohortNode":
      return n.children.map((c, i) => ({ id: c.child, path: ["children", i, "child"] }));
  }
}

function checkDefinition(def: { entryNode: JourneyEntryNode; nodes: JourneyBodyNode[] }, ctx: z.RefinementCtx) {
  const byId = new Map<string, number>();
  def.nodes.forEach((n, i) => {
    if (n.id === EXIT_NODE_ID) {
      ctx.addIssue({ code: "custom", path: ["nodes", i, "id"], message: `"${EXIT_NODE_ID}" is reserved for the exit node` });
    } else if (byId.has(n.id)) {
      ctx.addIssue({ code: "custom", path: ["nodes", i, "id"], message: `duplicate node id "${n.id}" (also nodes.${byId.get(n.id)})` });
    } else byId.set(n.id, i);
    if (n.type === "RandomCohortNode") {
      const total = n.children.reduce((sum, c) => sum + c.percent, 0);
      if (Math.abs(total - 100) > 1e-6) {
        ctx.addIssue({ code: "custom", path: ["nodes", i, "children"], message: `percents add up to ${total}, not 100` });
      }
    }
  });

  const located: { node: JourneyEntryNode | JourneyBodyNode; path: Path }[] = [
    { node: def.entryNode, path: ["entryNode"] },
    ...def.nodes.map((node, i) => ({ node, path: ["nodes", i] })),
  ];
  let dangling = false;
  for (const { node, path } of located) {
    for (const ref of journeyNodeChildren(node)) {
      if (ref.id !== EXIT_NODE_ID && !byId.has(ref.id)) {
        dangling = true;
        const hint = didYouMean(ref.id, [...byId.keys(), EXIT_NODE_ID]);
        ctx.addIssue({ code: "custom", path: [...path, ...ref.path], message: `names no node of the definition: "${ref.id}"${hint}` });
      }
    }
  }
  if (dangling) return;

  // Every node has at least one child and all children exist, so a graph without cycles leads
  // every path to ExitNode; a cycle is the only way a run could never end.
  const state = new Map<string, "active" | "done">();
  const visit = (at: { node: JourneyEntryNode | JourneyBodyNode; path: Path }): void => {
    for (const ref of journeyNodeChildren(at.node)) {
      if (ref.id === EXIT_NODE_ID) continue;
      const s = state.get(ref.id);
      if (s === "active") {
        ctx.addIssue({
          code: "custom",
          path: [...at.path, ...ref.path],
          message: `going back to "${ref.id}" closes a cycle; every path must reach ExitNode`,
        });
      } else if (s === undefined) {
        state.set(ref.id, "active");
        visit(located[byId.get(ref.id)! + 1]!);
        state.set(ref.id, "done");
      }
    }
  };
  visit(located[0]!);
  def.nodes.forEach((n, i) => {
    if (!state.has(n.id) && byId.get(n.id) === i) {
      ctx.addIssue({ code: "custom", path: ["nodes", i], message: `node "${n.id}" cannot be reached from the entry node` });
    }
  });
}

export const JourneyDefinition = z
  .strictObject({
    entryNode: JourneyEntryNode,
    nodes: z.array(JourneyBodyNode).max(500).describe("The steps, referenced by id from `child` fields."),
    exitNode: JourneyExitNode.default({ type: "ExitNode", id: EXIT_NODE_ID }),
  })
  .superRefine(checkDefinition)
  .describe(
    "The executable journey. Node ids are unique; every child names a node or `ExitNode`; no cycles; every node is reachable from `entryNode`; RandomCohortNode percents add up to 100. Referenced segments, templates and subscription groups must exist in the workspace.",
  )
  .openapi("JourneyDefinition");
export type JourneyDefinition = z.infer<typeof JourneyDefinition>;

// --- Editor graph (draft) ---------------------------------------------------------------------
// Work in progress: every field the editor may not have filled in yet is optional. Editor state
// (node positions, sizes, selection flags, the viewport…) may sit next to these fields at any
// level: every object here is loose, so it is stored and returned as sent.

const UiNodeId = z.string().min(1).max(200);
const LabelNodeId = UiNodeId.describe("Id of the label node that starts this branch.");

export const EntryUiNodeProps = z.looseObject({
  type: z.literal("EntryUiNode"),
  variant: z.discriminatedUnion("type", [
    z.looseObject({
      type: z.literal("EntryNode"),
      segment: z.string().max(200).optional().describe("Segment id."),
      child: UiNodeId.optional().describe("Id of the next node; used when the entry node has no outgoing edge."),
    }),
    z.looseObject({
      type: z.literal("EventEntryNode"),
      event: z.string().max(200).optional().describe("Track event name."),
      child: UiNodeId.optional().describe("Id of the next node; used when the entry node has no outgoing edge."),
    }),
  ]),
});

export const ExitUiNodeProps = z.looseObject({ type: z.literal("ExitNode") });

// The delay variants as the editor holds them: every field but `type` optional, and no defaults
// filled in (they apply when the draft is compiled), so the draft is stored as sent.
export const DelayUiNodeProps = z.looseObject({
  type: z.literal("DelayNode"),
  variant: z.discriminatedUnion("type", [
    SecondDelayVariant.loose().partial().required({ type: true }),
    LocalTimeDelayVariant.loose()
      .partial()
      .required({ type: true })
      .extend({ minute: LocalTimeDelayVariant.shape.minute.removeDefault().optional().describe("Minute of that hour (0 when left out).") }),
    UserPropertyDelayVariant.loose()
      .partial()
      .required({ type: true })
      .extend({
        offsetSeconds: UserPropertyDelayVariant.shape.offsetSeconds
          .removeDefault()
          .optional()
          .describe("Added to that date (0 when left out); negative to act before it."),
      }),
  ]),
});

export const MessageUiNodeProps = z.looseObject({
  type: z.literal("MessageNode"),
  name: z.string().max(200).optional(),
  channel: Channel,
  templateId: z.string().max(200).optional(),
  subscriptionGroupId: z.string().max(200).optional(),
});

export const SegmentSplitUiNodeProps = z.looseObject({
  type: z.literal("SegmentSplitNode"),
  name: z.string().max(200).optional(),
  segmentId: z.string().max(200).optional(),
  trueLabelNodeId: LabelNodeId,
  falseLabelNodeId: LabelNodeId,
});

export const WaitForUiNodeProps = z.looseObject({
  type: z.literal("WaitForNode"),
  name: z.string().max(200).optional(),
  timeoutSeconds: z.number().optional(),
  timeoutLabelNodeId: LabelNodeId,
  segmentChildren: z.array(z.looseObject({ labelNodeId: LabelNodeId, segmentId: z.string().max(200).optional() })).max(20),
});

export const RandomCohortUiNodeProps = z.looseObject({
  type: z.literal("RandomCohortNode"),
  name: z.string().max(200).optional(),
  cohortChildren: z
    .array(z.looseObject({ labelNodeId: LabelNodeId, percent: z.number().optional(), name: z.string().max(200).optional() }))
    .max(20),
});

export const JourneyUiNodeTypeProps = z
  .discriminatedUnion("type", [
    EntryUiNodeProps,
    ExitUiNodeProps,
    DelayUiNodeProps,
    MessageUiNodeProps,
    SegmentSplitUiNodeProps,
    WaitForUiNodeProps,
    RandomCohortUiNodeProps,
  ])
  .describe("The step a definition node of the editor stands for; branches start at label nodes named by `…LabelNodeId`.");
export type JourneyUiNodeTypeProps = z.infer<typeof JourneyUiNodeTypeProps>;

export const JourneyUiNodeDefinitionProps = z.looseObject({
  type: z.literal("JourneyUiNodeDefinitionProps"),
  nodeTypeProps: JourneyUiNodeTypeProps,
});
export const JourneyUiNodeLabelProps = z
  .looseObject({ type: z.literal("JourneyUiNodeLabelProps"), title: z.string().max(200) })
  .describe("A branch label (e.g. “true”, “false”, “timed out”); followed through its one outgoing edge.");
export const JourneyUiNodeEmptyProps = z
  .looseObject({ type: z.literal("JourneyUiNodeEmptyProps") })
  .describe("A placeholder where branches meet or a step can be inserted; followed through its one outgoing edge.");

export const JourneyUiDraftNode = z.looseObject({
  id: UiNodeId,
  data: z.discriminatedUnion("type", [JourneyUiNodeDefinitionProps, JourneyUiNodeLabelProps, JourneyUiNodeEmptyProps]),
});
export type JourneyUiDraftNode = z.infer<typeof JourneyUiDraftNode>;

export const JourneyUiDraftEdge = z.looseObject({
  source: UiNodeId.describe("Node id."),
  target: UiNodeId.describe("Node id."),
  data: z.discriminatedUnion("type", [
    z.looseObject({ type: z.literal("JourneyUiDefinitionEdgeProps"), disableMarker: z.boolean().optional() }),
    z.looseObject({ type: z.literal("JourneyUiPlaceholderEdgeProps") }),
  ]),
});
export type JourneyUiDraftEdge = z.infer<typeof JourneyUiDraftEdge>;

export const JourneyDraft = z
  .looseObject({
    nodes: z.array(JourneyUiDraftNode).max(1000),
    edges: z.array(JourneyUiDraftEdge).max(2000),
  })
  .describe(
    "The editor graph. It may be incomplete. Unlike the rest of a request, it keeps fields it does not know, at any level (node positions, sizes, flags, the viewport): they are stored and returned as sent, and never reach `definition`. When complete — one entry node, one exit node, every step's fields filled in, every step with one way on (its outgoing edge, through label and empty nodes) — the server compiles it into `definition`.",
  )
  .openapi("JourneyDraft");
export type JourneyDraft = z.infer<typeof JourneyDraft>;

// --- Resource and request/response shapes ---------------------------------------------------

export const JourneyStatus = z
  .enum(["NotStarted", "Running", "Paused"])
  .describe("`NotStarted` → `Running` ⇄ `Paused`; never back to `NotStarted`. `Running` needs a valid definition.");
export type JourneyStatus = z.infer<typeof JourneyStatus>;

export const JourneyResource = z
  .object({
    id: z.uuid(),
    workspaceId: WorkspaceId,
    name: z.string(),
    canRunMultiple: z.boolean().describe("Whether a user who finished a run may start another."),
    status: JourneyStatus,
    draft: JourneyDraft.optional(),
    definition: JourneyDefinition.optional().describe("Absent until a definition is sent or a complete draft compiled."),
    exitSegmentId: z
      .uuid()
      .nullable()
      .optional()
      .describe(
        "A run ends as soon as its user is in this segment, counted as `converted` in the stats; null when the journey has no exit segment.",
      ),
    version: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe(
        "The definition version new runs take: 1 when the journey first starts, +1 for each definition saved after that; 0 before it starts.",
      ),
    createdAt: EpochMillis,
    updatedAt: EpochMillis.describe("Last change of any field (ms since epoch)."),
    failing: DefinitionFailure.optional(),
  })
  .openapi("Journey");
export type JourneyResource = z.infer<typeof JourneyResource>;

export const UpsertJourneyRequestBody = z
  .strictObject({
    id: z
      .uuid()
      .optional()
      .describe("Upsert key. When given, the journey with this id is updated, or created with this id; else `name` is the key."),
    workspaceId: RequestWorkspaceId,
    name: resourceName("Unique within the workspace; renaming onto another journey's name is a 409."),
    canRunMultiple: z.boolean().optional().describe("Default false on create; omitted on update keeps the stored value."),
    status: JourneyStatus.optional().describe("Default `NotStarted` on create; omitted on update keeps the stored value."),
    draft: JourneyDraft.nullable()
      .optional()
      .describe(
        "Omitted keeps the stored draft; `null` removes it. Sent without `definition`, a complete draft is compiled into the definition; an incomplete one is stored as is, and removes the definition of a journey that has not started (a started journey keeps running its definition).",
      ),
    definition: JourneyDefinition.optional().describe("Sent: validated and stored as is (the draft is not compared with it)."),
    exitSegmentId: z
      .uuid()
      .nullable()
      .optional()
      .describe(
        "Segment id: a run ends as soon as its user is in it (counted `converted`). Omitted keeps the stored value; `null` removes it.",
      ),
    ...serverManagedFields,
    version: ServerManaged,
    failing: ServerManaged,
  })
  .describe("Creates or updates a journey.");
export type UpsertJourneyRequestBody = z.infer<typeof UpsertJourneyRequestBody>;

export const JourneyParams = idParams("Journey");
export const JourneyQuery = WorkspaceQuery;

export const JourneyListQuery = ListQuery;
export type JourneyListQuery = z.infer<typeof JourneyListQuery>;

export const JourneyListResponse = listResponse("journeys", JourneyResource);
export type JourneyListResponse = z.infer<typeof JourneyListResponse>;

// --- Runs and stats -----------------------------------------------------------------------------

export const JourneyRunStatus = z
  .enum(["Active", "Completed", "Converted", "Ended"])
  .describe(
    "`Active`: on its way; `Completed`: reached `ExitNode`; `Converted`: left because the user entered the journey's exit segment; `Ended`: stopped by the journey's deletion.",
  );
export type JourneyRunStatus = z.infer<typeof JourneyRunStatus>;

export const JourneyRun = z
  .object({
    id: z.uuid(),
    journeyId: z.uuid(),
    userId: z.string(),
    version: z.number().int().describe("The definition version the run follows to its end."),
    status: JourneyRunStatus,
    nodeId: z.string().describe("The node the run is at (for an ended run, the last one it reached)."),
    waitingUntil: EpochMillis.nullable().describe("For a run waiting in a delay or a wait: when the delay ends or the wait times out."),
    event: z
      .record(z.string(), z.unknown())
      .nullable()
      .describe("The track event that started the run (EventEntryNode), as `event` in its messages' templates."),
    enteredAt: EpochMillis,
    updatedAt: EpochMillis,
    endedAt: EpochMillis.nullable(),
  })
  .openapi("JourneyRun");
export type JourneyRun = z.infer<typeof JourneyRun>;

export const JourneyRunListQuery = ListQuery.extend({
  userId: z.string().min(1).max(255).optional().describe("Only this user's runs."),
  status: JourneyRunStatus.optional().describe("Only runs in this status."),
});
export type JourneyRunListQuery = z.infer<typeof JourneyRunListQuery>;

export const JourneyRunListResponse = listResponse("runs", JourneyRun);
export type JourneyRunListResponse = z.infer<typeof JourneyRunListResponse>;

export const JourneyStatsQuery = WorkspaceQuery.extend({
  version: z.coerce
    .number()
    .int()
    .min(1)
    .optional()
    .describe("Only runs of this definition version (its nodes); default every version, with the current version's nodes."),
});
export type JourneyStatsQuery = z.infer<typeof JourneyStatsQuery>;

const RunCounts = {
  entered: z.number().int().describe("Runs started."),
  active: z.number().int().describe("Runs on their way now."),
  completed: z.number().int().describe("Runs that reached `ExitNode`."),
  converted: z.number().int().describe("Runs ended by the exit segment."),
};

export const JourneyNodeStats = z
  .object({
    id: z.string().describe("Node id (`ExitNode` for the exit)."),
    type: z.string().describe("Node type."),
    waiting: z.number().int().describe("Active runs at this node now."),
    reached: z.number().int().describe("Runs that arrived at this node."),
    sent: z.number().int().optional().describe("Message nodes: deliveries sent."),
    skipped: z.number().int().optional().describe("Message nodes: deliveries skipped (unsubscribed, no contact point…)."),
    failed: z.number().int().optional().describe("Message nodes: deliveries that failed for good."),
    queued: z.number().int().optional().describe("Message nodes: deliveries not sent yet (deferred ones apart)."),
    deferred: z.number().int().optional().describe("Message nodes: deliveries held by a delivery policy (Deferred)."),
  })
  .openapi("JourneyNodeStats");
export type JourneyNodeStats = z.infer<typeof JourneyNodeStats>;

export const JourneyStats = z
  .object({
    journeyId: z.uuid(),
    version: z.number().int().nullable().describe("The version asked for; null for every version."),
    ...RunCounts,
    nodes: z
      .array(JourneyNodeStats)
      .describe("Per node of the version's definition (the current one when no version is asked), in definition order, then `ExitNode`."),
    versions: z
      .array(z.object({ version: z.number().int(), ...RunCounts }))
      .describe("The same run counts per definition version that has runs."),
  })
  .openapi("JourneyStats");
export type JourneyStats = z.infer<typeof JourneyStats>;
