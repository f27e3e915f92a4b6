// One compiler, two scopes: a segment definition becomes one set-based SQL query that
// evaluates it for every user of a workspace (a full recompute) or only for the users a change
// touched (incremental), at an instant given as a parameter, each node by the compiler of its
// kind (compile-nodes.ts). Semantics: docs/segments.md.
//
// The query is a fragment (db/sql.ts) over the segment's inputs (SegmentInputs), which the
// statement around it may use too. It returns one row per profile in scope: (profile_id, member,
// next_at), next_at being the next instant after now at which the result could change with no
// new data (a window opening or closing), or NULL.
import { manualSegmentDefinition, SegmentDefinition, type SegmentNode } from "@tidings/schema";
import { join, raw, type Sql, sql } from "../../db/sql.ts";
import { outboxKey } from "../../outbox/index.ts";
import { compileNode, type ScopeCopy } from "./compile-nodes.ts";
import { type Condition, least } from "./operators.ts";
import type { SegmentInputs, SubscriptionGroupTypes } from "./inputs.ts";

export { type SegmentInputs, type SubscriptionGroupTypes, segmentInputs } from "./inputs.ts";

/**
 * A definition read back from the database (a segment's, a broadcast's inline audience), parsed
 * with the schema before any of it reaches SQL text; `owner` names it in the error.
 */
export function parseStoredDefinition(stored: unknown, owner: string): SegmentDefinition {
  const parsed = SegmentDefinition.safeParse(stored);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((i) => `${i.path.length > 0 ? i.path.join(".") : "(definition)"}: ${i.message}`);
  throw new Error(`${owner}: the stored definition is not a valid segment definition (${issues.join("; ")})`);
}

/** A segments row's definition, parsed; a row stored without one is a manual segment. */
export const storedSegmentDefinition = (row: { id: string; definition: unknown }): SegmentDefinition =>
  row.definition === null ? manualSegmentDefinition() : parseStoredDefinition(row.definition, `segment ${row.id}`);

/** Nodes by id (the entry node included). */
export function nodesById(def: SegmentDefinition): Map<string, SegmentNode> {
  const byId = new Map<string, SegmentNode>([[def.entryNode.id, def.entryNode]]);
  for (const n of def.nodes) if (!byId.has(n.id)) byId.set(n.id, n);
  return byId;
}

/** A compiled definition: its query, and whether any row of it can have a `next_at` (a window). */
export interface CompiledSegment {
  query: Sql;
  timed: boolean;
}

/**
 * The query of `def` for `inputs`: for the profiles of `inputs.scope`, or every profile when it is
 * null. `copy`, with a scope, holds the scope's profiles and every event of theirs the
 * definition reads (scope-events.ts), read instead of `profiles` and `events`.
 */
export function compileSegment(
  def: SegmentDefinition,
  groups: SubscriptionGroupTypes,
  inputs: SegmentInputs,
  copy: ScopeCopy | null = null,
): CompiledSegment {
  const { workspaceId, scope } = inputs;
  const scoped = scope.value !== null;
  const copied = scoped ? copy : null;
  const byId = nodesById(def);
  const ctes: Sql[] = [];
  const joins: Sql[] = [];
  // Each node compiled once (a child shared by several parents reuses its condition and CTEs).
  const compiled = new Map<string, Condition>();
  const compile = (n: SegmentNode): Condition => {
    const known = compiled.get(n.id);
    if (known) return known;
    const condition = compileNode(n, {
      inputs,
      scoped,
      copy: copied,
      groups,
      alias: raw(`n${ctes.length}`),
      child: (id) => compile(byId.get(id)!),
      cte: (definition) => ctes.push(definition),
      join: (clause) => joins.push(clause),
      // OFFSET 0 keeps the planner from substituting the expression back into every use.
      once: (expr) => {
        const x = raw(`x${joins.length}`);
        joins.push(sql`CROSS JOIN LATERAL (SELECT ${expr} AS v OFFSET 0) ${x}`);
        return sql`${x}.v`;
      },
    });
    compiled.set(n.id, condition);
    return condition;
  };
  const root = compile(def.entryNode);
  const inScope = (column: string) => sql`(${scope}::text[] IS NULL OR ${raw(column)} = ANY(${scope}::text[]))`;
  // Every id whose events belong to a profile in scope: the profile's own id and its aliases.
  const ids = sql`ids AS ${raw(scoped ? "MATERIALIZED " : "")}(
    SELECT p.workspace_id, p.profile_id, p.profile_id AS identity_id FROM profiles p
    WHERE p.workspace_id = ${workspaceId} AND ${inScope("p.profile_id")}
    UNION ALL
    SELECT a.workspace_id, a.profile_id, a.alias_id FROM profile_aliases a
    WHERE a.workspace_id = ${workspaceId} AND ${inScope("a.profile_id")})`;
  // The profiles evaluated: the drain's copy of them (read by each segment of the drain, where
  // each looked its profiles up again), or the table.
  const [profiles, inProfiles] = copied
    ? [copied.profiles, copied.exact ? raw("true") : sql`p.profile_id = ANY(${scope}::text[])`]
    : [raw("profiles"), sql`p.workspace_id = ${workspaceId} AND ${inScope("p.profile_id")}`];
  const withs = copied ? ctes : [ids, ...ctes];
  const query = sql`${withs.length > 0 ? sql`WITH ${join(withs, ",\n")}` : raw("")}
    SELECT p.profile_id, ${root.cond} AS member, ${least(root.flips)} AS next_at
    FROM ${profiles} p ${join(joins, "\n    ")}
    WHERE ${inProfiles}`;
  return { query, timed: root.flips.length > 0 };
}

// ---------------------------------------------------------------------------------------
// What a definition depends on

type Maybe = boolean | "maybe";

/** Whether the node can hold for a user with no traits, no events and no assignments (each node decided once). */
function onEmpty(n: SegmentNode, byId: Map<string, SegmentNode>, memo = new Map<string, Maybe>()): Maybe {
  const known = memo.get(n.id);
  if (known !== undefined) return known;
  const child = (id: string) => onEmpty(byId.get(id)!, byId, memo);
  let value: Maybe;
  switch (n.type) {
    case "Everyone":
      value = true;
      break;
    case "Trait":
      value = n.operator.type === "NotExists";
      break;
    case "Performed":
      value = n.timesOperator === "<" ? n.times > 0 : n.times === 0;
      break;
    case "LastPerformed":
    case "Manual":
      value = false;
      break;
    case "SubscriptionGroup":
    case "RandomBucket":
      value = "maybe";
      break;
    case "Not": {
      const inner = child(n.child);
      value = inner === "maybe" ? "maybe" : !inner;
      break;
    }
    case "And":
    case "Or": {
      const parts = n.children.map(child);
      if (n.type === "And") value = parts.includes(false) ? false : parts.includes("maybe") ? "maybe" : true;
      else value = parts.includes(true) ? true : parts.includes("maybe") ? "maybe" : false;
      break;
    }
  }
  memo.set(n.id, value);
  return value;
}

/**
 * The outbox keys (docs/segments.md) a change must carry to affect the segment: `e:<event>`
 * for event nodes, `t:<top-level trait key>` for traits, `sg:<group id>`, `manual`; and `*`
 * when a user with no data at all could be a member, so any change to any user matters.
 */
export function segmentDependencies(def: SegmentDefinition): string[] {
  const byId = nodesById(def);
  const keys = new Set<string>();
  for (const n of byId.values()) {
    if (n.type === "Trait") keys.add(outboxKey.trait(n.path.split(".")[0]!));
    else if (n.type === "Performed" || n.type === "LastPerformed") keys.add(outboxKey.event(n.event));
    else if (n.type === "SubscriptionGroup") keys.add(outboxKey.group(n.subscriptionGroupId));
    else if (n.type === "Manual") keys.add(outboxKey.manual);
  }
  if (onEmpty(def.entryNode, byId) !== false) keys.add(outboxKey.any);
  return [...keys].sort();
}

/** How adding events can change a node's value: not at all, only from false to true, only from true to false, or either way. */
type Direction = "none" | "up" | "down" | "both";

function direction(
  n: SegmentNode,
  byId: Map<string, SegmentNode>,
  events: ReadonlySet<string>,
  memo = new Map<string, Direction>(),
): Direction {
  const known = memo.get(n.id);
  if (known !== undefined) return known;
  const child = (id: string) => direction(byId.get(id)!, byId, events, memo);
  let value: Direction;
  switch (n.type) {
    case "Performed":
      // Added events only raise the count, at every instant (whatever the window or the dates in properties).
      if (!events.has(n.event)) value = "none";
      else value = n.timesOperator === ">=" ? "up" : n.timesOperator === "<" ? "down" : "both";
      break;
    case "LastPerformed":
      value = events.has(n.event) ? "both" : "none";
      break;
    case "Not": {
      const inner = child(n.child);
      value = inner === "up" ? "down" : inner === "down" ? "up" : inner;
      break;
    }
    case "And":
    case "Or": {
      const parts = new Set(n.children.map(child));
      parts.delete("none");
      value = parts.size === 0 ? "none" : parts.size === 1 ? [...parts][0]! : "both";
      break;
    }
    default:
      // Traits (HasBeen reads identifies, not track events), assignments, buckets, Everyone.
      value = "none";
  }
  memo.set(n.id, value);
  return value;
}

/**
 * What adding track events named `events`, and nothing else, can do to a user's membership: only
 * let a non-member enter ("enter": they raise the counts of `>=` nodes under an even number of
 * Nots), only let a member leave ("exit"), or either (null). It holds at every instant from now
 * on, so a member (or non-member) skipped keeps its timer: the earliest instant its old data
 * could flip is no later than its new data's (docs/segments.md).
 */
export function addedEventsCanOnly(def: SegmentDefinition, events: ReadonlySet<string>): "enter" | "exit" | null {
  const d = direction(def.entryNode, nodesById(def), events);
  return d === "up" ? "enter" : d === "down" ? "exit" : null;
}
