// Segments: audience definitions (a graph of condition nodes) and the admin wire shapes around them.
// The structural checks live here, in the schema, so the server, the SDK and the CLI reject the
// same definitions with the same issue paths.
import { z } from "./zod.js";
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
  UserIdList,
  WorkspaceId,
  WorkspaceQuery,
} from "./common.js";

// Every object of a definition is strict: a misspelt field (`within_seconds`) is a 400 naming it,
// never a condition silently dropped.

// --- Operators -------------------------------------------------------------------------------

/**
 * What one definition may hold (documented in the OpenAPI descriptions and the README): every
 * walk over a definition is linear in `expandedNodes`, so nothing a definition holds can make
 * compiling or evaluating it cost more than a bounded amount.
 */
export const SEGMENT_DEFINITION_LIMITS = {
  /** Nodes besides `entryNode`. */
  nodes: 500,
  /** Children of one And/Or node. */
  children: 100,
  /** Longest chain of references from `entryNode` (entryNode is depth 1). */
  depth: 32,
  /** Nodes counted once per path from `entryNode` (a node shared by two parents counts twice). */
  expandedNodes: 2000,
  /** Property conditions of one Performed or LastPerformed node (each list). */
  conditions: 50,
  /** Longest window, in seconds (100 years). */
  windowSeconds: 100 * 365 * 24 * 3600,
  /** Largest `times` of a Performed node. */
  times: 1_000_000,
} as const;

/** Instants a definition may name: years 1 to 9999 (JavaScript and PostgreSQL both hold them). */
export const DEFINITION_INSTANT_RANGE = { min: -62_135_596_800_000, max: 253_402_300_799_999 } as const;

const Scalar = z.union([z.string().max(10_000), z.number(), z.boolean()]);
const WindowSeconds = z
  .number()
  .int()
  .positive()
  .max(SEGMENT_DEFINITION_LIMITS.windowSeconds)
  .describe(`Length of the window in seconds, at most ${SEGMENT_DEFINITION_LIMITS.windowSeconds} (100 years).`);

export const EqualsOperator = z.strictObject({
  type: z.literal("Equals"),
  value: Scalar.describe("The value must equal this (strings, numbers and booleans compare by type and value)."),
});
export const NotEqualsOperator = z.strictObject({
  type: z.literal("NotEquals"),
  value: Scalar.describe("The value must be present and differ from this."),
});
export const ExistsOperator = z.strictObject({ type: z.literal("Exists") }).describe("The value is present and not null.");
export const NotExistsOperator = z.strictObject({ type: z.literal("NotExists") }).describe("The value is absent or null.");
export const GreaterThanOrEqualOperator = z.strictObject({
  type: z.literal("GreaterThanOrEqual"),
  value: z.number().describe("The numeric value must be ≥ this."),
});
export const LessThanOperator = z.strictObject({
  type: z.literal("LessThan"),
  value: z.number().describe("The numeric value must be < this."),
});
export const GreaterThanOperator = z.strictObject({
  type: z.literal("GreaterThan"),
  value: z.number().describe("The numeric value must be > this."),
});
export const LessThanOrEqualOperator = z.strictObject({
  type: z.literal("LessThanOrEqual"),
  value: z.number().describe("The numeric value must be ≤ this."),
});
export const WithinOperator = z
  .strictObject({ type: z.literal("Within"), windowSeconds: WindowSeconds })
  .describe("The value, an ISO 8601 date or an epoch number (ms), lies within the last `windowSeconds`.");
export const HasBeenOperator = z
  .strictObject({
    type: z.literal("HasBeen"),
    comparator: z.enum(["GTE", "LT"]).describe("`GTE`: for at least the window; `LT`: for less than the window."),
    value: Scalar.describe("The value the trait has equalled."),
    windowSeconds: WindowSeconds,
  })
  .describe("The trait has equalled `value` for ≥ (GTE) or < (LT) `windowSeconds`.");
export const AbsoluteTimestampOperator = z
  .strictObject({
    type: z.literal("AbsoluteTimestamp"),
    absoluteTimestamp: EpochMillis.min(DEFINITION_INSTANT_RANGE.min)
      .max(DEFINITION_INSTANT_RANGE.max)
      .describe("The instant compared with (ms since epoch), within years 1 to 9999."),
    direction: z.enum(["after", "before"]).describe("Whether the value's date must be after or before the instant."),
  })
  .describe("The value, an ISO 8601 date or an epoch number (ms), lies after or before a fixed instant.");

/** Operators that need no value history: every one but `HasBeen`. */
const valueOperators = [
  EqualsOperator,
  NotEqualsOperator,
  ExistsOperator,
  NotExistsOperator,
  GreaterThanOrEqualOperator,
  LessThanOperator,
  GreaterThanOperator,
  LessThanOrEqualOperator,
  WithinOperator,
  AbsoluteTimestampOperator,
] as const;

export const SegmentOperator = z
  .discriminatedUnion("type", [...valueOperators, HasBeenOperator])
  .describe("Condition on a trait value; `type` selects its shape.");
export type SegmentOperator = z.infer<typeof SegmentOperator>;

/** Event properties have no value history, so `HasBeen` is not offered for them. */
export const PropertyOperator = z
  .discriminatedUnion("type", [...valueOperators])
  .describe("Condition on an event property; any operator but `HasBeen`.");
export type PropertyOperator = z.infer<typeof PropertyOperator>;

export const PropertyCondition = z.strictObject({
  path: z.string().min(1).max(500).describe("Dot path into the event's `properties`, e.g. `plan.name`."),
  operator: PropertyOperator,
});
export type PropertyCondition = z.infer<typeof PropertyCondition>;

const Conditions = z.array(PropertyCondition).max(SEGMENT_DEFINITION_LIMITS.conditions);

// --- Nodes -----------------------------------------------------------------------------------

const NodeId = z.string().min(1).max(200).describe("Node identifier, unique within the definition.");
const node = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) =>
  z.strictObject({ type: z.literal(type), id: NodeId, ...shape });

export const TraitSegmentNode = node("Trait", {
  path: z.string().min(1).max(500).describe("Dot path into the user's traits, e.g. `address.country`."),
  operator: SegmentOperator,
}).describe("True when the operator holds on the latest value of the trait.");

export const PerformedSegmentNode = node("Performed", {
  event: z.string().min(1).max(200).describe("Name of the track event counted."),
  times: z
    .number()
    .int()
    .min(0)
    .max(SEGMENT_DEFINITION_LIMITS.times)
    .default(1)
    .describe(`Number of matching events compared with (default 1, at most ${SEGMENT_DEFINITION_LIMITS.times}).`),
  timesOperator: z.enum(["=", ">=", "<"]).default(">=").describe("How the count of matching events compares with `times` (default `>=`)."),
  withinSeconds: WindowSeconds.optional().describe(
    `Count only events of the last \`withinSeconds\` (at most ${SEGMENT_DEFINITION_LIMITS.windowSeconds}, 100 years).`,
  ),
  properties: Conditions.optional().describe("Count only events whose properties satisfy every condition."),
}).describe("True when the count of matching track events (distinct messageId) compares with `times`.");

export const LastPerformedSegmentNode = node("LastPerformed", {
  event: z.string().min(1).max(200).describe("Name of the track event."),
  whereProperties: Conditions.optional().describe("Which events are considered: only those satisfying every condition."),
  hasProperties: Conditions.optional().describe("Conditions the latest considered event must satisfy."),
}).describe("True when the latest matching event has the properties.");

export const AndSegmentNode = node("And", {
  children: z
    .array(NodeId)
    .min(1)
    .max(SEGMENT_DEFINITION_LIMITS.children)
    .describe(`Ids of the child nodes, each at most once (at most ${SEGMENT_DEFINITION_LIMITS.children}); true when all are.`),
}).describe("True when every child is.");
export const OrSegmentNode = node("Or", {
  children: z
    .array(NodeId)
    .min(1)
    .max(SEGMENT_DEFINITION_LIMITS.children)
    .describe(`Ids of the child nodes, each at most once (at most ${SEGMENT_DEFINITION_LIMITS.children}); true when any is.`),
}).describe("True when any child is.");
export const NotSegmentNode = node("Not", { child: NodeId.describe("Id of the negated node.") }).describe("True when the child is false.");
export const EveryoneSegmentNode = node("Everyone", {}).describe("True for every known user.");
export const SubscriptionGroupSegmentNode = node("SubscriptionGroup", {
  subscriptionGroupId: z.uuid().describe("A subscription group of the workspace."),
}).describe("True when the user is subscribed to the group (explicitly, or by default for an OptOut group).");
export const RandomBucketSegmentNode = node("RandomBucket", {
  percent: z.number().min(0).max(1).describe("Share of users in the bucket, 0–1."),
}).describe("True when a stable hash of (segment, user) falls below `percent`.");
export const ManualSegmentNode = node("Manual", {}).describe("True for users added with PUT /api/admin/segments/{id}/members.");

export const SegmentNode = z
  .discriminatedUnion("type", [
    TraitSegmentNode,
    PerformedSegmentNode,
    LastPerformedSegmentNode,
    AndSegmentNode,
    OrSegmentNode,
    NotSegmentNode,
    EveryoneSegmentNode,
    SubscriptionGroupSegmentNode,
    RandomBucketSegmentNode,
    ManualSegmentNode,
  ])
  .describe("A condition of a segment definition; `type` selects its shape.")
  .openapi("SegmentNode");
export type SegmentNode = z.infer<typeof SegmentNode>;
export type SegmentNodeType = SegmentNode["type"];

// --- Definition and its structural checks ----------------------------------------------------

type Path = (string | number)[];

/** Ids a node refers to, each with its path relative to the node. */
export function segmentNodeReferences(n: SegmentNode): { id: string; path: Path }[] {
  if (n.type === "And" || n.type === "Or") return n.children.map((id, i) => ({ id, path: ["children", i] }));
  if (n.type === "Not") return [{ id: n.child, path: ["child"] }];
  return [];
}

const sameNode = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

function checkDefinition(def: { entryNode: SegmentNode; nodes: SegmentNode[] }, ctx: z.RefinementCtx) {
  // Every node with where it sits; the entry node may be repeated in `nodes` as the same node.
  const located: { node: SegmentNode; path: Path }[] = [{ node: def.entryNode, path: ["entryNode"] }];
  const byId = new Map<string, { node: SegmentNode; path: Path }>([[def.entryNode.id, located[0]!]]);
  def.nodes.forEach((n, i) => {
    const path: Path = ["nodes", i];
    const seen = byId.get(n.id);
    if (seen) {
      if (seen.path[0] === "entryNode" && sameNode(seen.node, n)) return;
      ctx.addIssue({
        code: "custom",
        path: [...path, "id"],
        message:
          seen.path[0] === "entryNode"
            ? `node id "${n.id}" is the entryNode's id but the node differs from entryNode`
            : `duplicate node id "${n.id}" (also at ${seen.path.join(".")})`,
      });
      return;
    }
    const entry = { node: n, path };
    byId.set(n.id, entry);
    located.push(entry);
  });

  let broken = false;
  for (const { node: n, path } of located) {
    const seen = new Set<string>();
    for (const ref of segmentNodeReferences(n)) {
      if (seen.has(ref.id)) {
        broken = true;
        ctx.addIssue({ code: "custom", path: [...path, ...ref.path], message: `child "${ref.id}" is listed twice; list each child once` });
      }
      seen.add(ref.id);
      if (!byId.has(ref.id)) {
        broken = true;
        ctx.addIssue({ code: "custom", path: [...path, ...ref.path], message: `references unknown node id "${ref.id}"` });
      }
    }
  }

  // Depth-first search; an edge back to a node on the current path closes a cycle.
  let cycles = 0;
  const state = new Map<string, "active" | "done">();
  const visit = (id: string): void => {
    state.set(id, "active");
    const { node: n, path } = byId.get(id)!;
    for (const ref of segmentNodeReferences(n)) {
      if (!byId.has(ref.id)) continue;
      const s = state.get(ref.id);
      if (s === "active") {
        cycles++;
        ctx.addIssue({
          code: "custom",
          path: [...path, ...ref.path],
          message: `reference to "${ref.id}" closes a cycle; definitions must be acyclic`,
        });
      } else if (s === undefined) visit(ref.id);
    }
    state.set(id, "done");
  };
  for (const { node: n } of located) if (!state.has(n.id)) visit(n.id);
  if (!broken && cycles === 0) checkSize(def.entryNode, byId, ctx);
}

/**
 * The depth and the expanded size (nodes counted once per path) from the entry node, each node
 * measured once (memoised by id), so a definition whose nodes share children costs linear time to
 * check; past SEGMENT_DEFINITION_LIMITS it is refused at the entry node's path.
 */
function checkSize(entry: SegmentNode, byId: Map<string, { node: SegmentNode; path: Path }>, ctx: z.RefinementCtx) {
  const measured = new Map<string, { depth: number; expanded: number }>();
  const measure = (n: SegmentNode): { depth: number; expanded: number } => {
    const known = measured.get(n.id);
    if (known) return known;
    let depth = 0;
    let expanded = 1;
    for (const ref of segmentNodeReferences(n)) {
      const child = measure(byId.get(ref.id)!.node);
      depth = Math.max(depth, child.depth);
      // Capped: the sum of a shared child's paths can pass any number in a few dozen levels.
      expanded = Math.min(expanded + child.expanded, SEGMENT_DEFINITION_LIMITS.expandedNodes + 1);
    }
    const size = { depth: depth + 1, expanded };
    measured.set(n.id, size);
    return size;
  };
  const { depth, expanded } = measure(entry);
  const { depth: maxDepth, expandedNodes } = SEGMENT_DEFINITION_LIMITS;
  if (depth > maxDepth) {
    ctx.addIssue({
      code: "custom",
      path: ["entryNode"],
      message: `the definition is ${depth} nodes deep; at most ${maxDepth} are allowed`,
    });
  }
  if (expanded > expandedNodes) {
    ctx.addIssue({
      code: "custom",
      path: ["entryNode"],
      message: `the definition expands to more than ${expandedNodes} nodes (a node counts once per path from entryNode); share fewer children`,
    });
  }
}

export const SegmentDefinition = z
  .strictObject({
    entryNode: SegmentNode.describe(
      "The root node: the segment's members are the users for whom it is true. It may also be listed in `nodes`.",
    ),
    nodes: z
      .array(SegmentNode)
      .max(SEGMENT_DEFINITION_LIMITS.nodes)
      .default([])
      .describe("The other nodes, referenced by id from And/Or `children` and Not `child`."),
  })
  .superRefine(checkDefinition)
  .describe(
    `Audience definition: a graph of nodes evaluated from \`entryNode\`. Node ids are unique across \`entryNode\` and \`nodes\` (the entry node may be repeated in \`nodes\` unchanged); And/Or/Not references must name nodes of the definition, each child at most once per node, and may not form a cycle. Limits: ${SEGMENT_DEFINITION_LIMITS.nodes} nodes, ${SEGMENT_DEFINITION_LIMITS.children} children per node, ${SEGMENT_DEFINITION_LIMITS.depth} levels deep, ${SEGMENT_DEFINITION_LIMITS.expandedNodes} nodes once every path from \`entryNode\` is followed (a node shared by two parents counts twice), ${SEGMENT_DEFINITION_LIMITS.conditions} property conditions per list.`,
  )
  .openapi("SegmentDefinition");
export type SegmentDefinition = z.infer<typeof SegmentDefinition>;

/** The definition of a segment created without one: membership is set by hand. */
export const manualSegmentDefinition = (): SegmentDefinition => ({ entryNode: { type: "Manual", id: "manual" }, nodes: [] });

/** Whether users can be added to the segment by hand, i.e. its definition has a Manual node. */
export const hasManualNode = (def: SegmentDefinition) => def.entryNode.type === "Manual" || def.nodes.some((n) => n.type === "Manual");

// --- Resource and request/response shapes ---------------------------------------------------

export const SegmentResource = z
  .object({
    id: z.uuid(),
    workspaceId: WorkspaceId,
    name: z.string(),
    definition: SegmentDefinition.optional().describe(
      'The audience definition. A segment created without one has `{entryNode: {type: "Manual", id: "manual"}, nodes: []}`. Absent only when the stored definition is not valid under the current limits (stored by an older release): the segment is then `failing`, with the reason; PUT a valid definition to fix it.',
    ),
    subscriptionGroupId: z.uuid().optional().describe("Subscription group this segment is tied to."),
    updatedAt: EpochMillis.describe("Last change of any field (ms since epoch)."),
    createdAt: EpochMillis,
    definitionUpdatedAt: EpochMillis.describe("Last change of `definition`; a PUT with an equal definition keeps it."),
    lastRecomputed: EpochMillis.optional().describe(
      "When the segment engine last recomputed every user against the current definition (absent until it has). Between recomputes membership is kept current incrementally.",
    ),
    memberCount: z.number().int().describe("Current members."),
    failing: DefinitionFailure.optional(),
  })
  .openapi("Segment");
export type SegmentResource = z.infer<typeof SegmentResource>;

export const UpsertSegmentRequestBody = z
  .strictObject({
    id: z
      .uuid()
      .optional()
      .describe("Upsert key. When given, the segment with this id is updated, or created with this id; else `name` is the key."),
    workspaceId: RequestWorkspaceId,
    name: resourceName("Unique within the workspace; renaming onto another segment's name is a 409."),
    definition: SegmentDefinition.optional().describe(
      "Omitted on create: a manual segment. Omitted on update: the stored definition is kept.",
    ),
    subscriptionGroupId: z
      .uuid()
      .nullable()
      .optional()
      .describe("An existing subscription group of the workspace; `null` unlinks; omitted keeps the stored value."),
    ...serverManagedFields,
    memberCount: ServerManaged,
    failing: ServerManaged,
  })
  .describe("Creates or updates a segment.");
export type UpsertSegmentRequestBody = z.infer<typeof UpsertSegmentRequestBody>;

export const SegmentParams = idParams("Segment");
export const SegmentQuery = WorkspaceQuery;

export const SegmentListQuery = ListQuery;
export type SegmentListQuery = z.infer<typeof SegmentListQuery>;

export const SegmentListResponse = listResponse("segments", SegmentResource);
export type SegmentListResponse = z.infer<typeof SegmentListResponse>;

export const SegmentMembersRequestBody = z
  .strictObject({
    workspaceId: RequestWorkspaceId,
    add: UserIdList.optional().describe("User ids (or linked anonymousIds) to add; at most 1000."),
    remove: UserIdList.optional().describe("User ids (or linked anonymousIds) to remove; at most 1000."),
  })
  .describe("Changes the hand-set members of a segment whose definition has a Manual node.");
export type SegmentMembersRequestBody = z.infer<typeof SegmentMembersRequestBody>;

export const SegmentMembersResponse = z.object({
  added: z.number().int().describe("Users that were not members and now are."),
  removed: z.number().int().describe("Users that were members and no longer are."),
  total: z.number().int().describe("Hand-set members after the change."),
});
export type SegmentMembersResponse = z.infer<typeof SegmentMembersResponse>;

export const SegmentUser = z.object({
  userId: z.string().describe("Canonical user id (an anonymousId linked to a user counts as that user)."),
  enteredAt: EpochMillis.describe("When the user last entered the segment (ms since epoch)."),
});
export type SegmentUser = z.infer<typeof SegmentUser>;

export const SegmentUsersQuery = ListQuery.extend({
  search: z
    .string()
    .min(1)
    .max(255)
    .optional()
    .describe(
      "Only members whose user id contains this text (case-insensitive). The members are read in user-id order until a page is full: a search matching few of a large segment's members reads much of it.",
    ),
});
export type SegmentUsersQuery = z.infer<typeof SegmentUsersQuery>;

export const SegmentUsersResponse = listResponse("users", SegmentUser);
export type SegmentUsersResponse = z.infer<typeof SegmentUsersResponse>;

// --- Size history ---------------------------------------------------------------------------

export const SegmentSizeInterval = z.enum(["hour", "day"]).describe("The length of each point's interval (UTC hours or days).");
export type SegmentSizeInterval = z.infer<typeof SegmentSizeInterval>;

/** At most this many points in one answer. */
export const MAX_SIZE_POINTS = 2000;

export const SegmentSizesQuery = WorkspaceQuery.extend({
  interval: SegmentSizeInterval.default("day"),
  from: z.coerce
    .number()
    .int()
    .min(0)
    .optional()
    .describe("Start (ms since epoch), rounded down to its interval; default 30 days before `to`."),
  to: z.coerce.number().int().min(0).optional().describe("End (ms since epoch); default now."),
});
export type SegmentSizesQuery = z.infer<typeof SegmentSizesQuery>;

export const SegmentSizePoint = z
  .object({
    at: EpochMillis.describe("The end of the interval (or now, for the interval under way)."),
    size: z
      .number()
      .int()
      .nullable()
      .describe("Members at `at`: the size after the last change before it; null before the segment's history starts."),
  })
  .openapi("SegmentSizePoint");

export const SegmentSizesResponse = z
  .object({
    segmentId: z.uuid(),
    interval: SegmentSizeInterval,
    points: z.array(SegmentSizePoint).describe("One per interval from `from` to `to`, oldest first."),
  })
  .openapi("SegmentSizes");
export type SegmentSizesResponse = z.infer<typeof SegmentSizesResponse>;
