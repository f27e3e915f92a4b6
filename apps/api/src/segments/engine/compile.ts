// One compiler, two scopes: a segment definition becomes one set-based SQL query that
// evaluates it for every user of a workspace (a full recompute) or only for the users a change
// touched (incremental), at an instant given as a parameter. Semantics: docs/segments.md.
//
// The query is a fragment (db/sql.ts) over the segment's inputs (SegmentInputs), which the
// statement around it may use too. It returns one row per profile in scope: (profile_id, member,
// next_at), next_at being the next instant after now at which the result could change with no
// new data (a window opening or closing), or NULL.
import type { PropertyCondition, PropertyOperator, SegmentDefinition, SegmentNode, SegmentOperator } from "@tidings/schema";
import { join, type Param, param, raw, type Sql, sql } from "../../db/sql.ts";
import { outboxKey } from "../../outbox/index.ts";

/** What a compiled query is evaluated for, as parameters the statement around it may use too. */
export interface SegmentInputs {
  workspaceId: Param;
  /** The segment's id: RandomBucket's hash and Manual's members. */
  segmentId: Param;
  /** The instant evaluated at (timestamptz). */
  now: Param;
  /** The profile ids evaluated (text[]), or null for every profile of the workspace. */
  scope: Param;
}

export function segmentInputs(workspaceId: string, segmentId: string, now: Date, scope: string[] | null): SegmentInputs {
  return { workspaceId: param(workspaceId), segmentId: param(segmentId), now: param(now), scope: param(scope) };
}

export type SubscriptionGroupTypes = ReadonlyMap<string, "OptIn" | "OptOut">;

/** A condition on a profile, and the instants (> now) at which it could flip. */
interface Condition {
  cond: Sql;
  flips: Sql[];
}

const ms = raw("interval '1 millisecond'");
/** The numeric operators and their SQL comparison (JSON numbers only: anything else is false). */
const NUMBER_COMPARISONS = { GreaterThanOrEqual: ">=", GreaterThan: ">", LessThan: "<", LessThanOrEqual: "<=" } as const;
/** A Performed node's comparisons of its count with `times`. */
const COUNT_COMPARISONS = { "=": "=", ">=": ">=", "<": "<" } as const;
const jsonb = (value: unknown) => sql`${JSON.stringify(value)}::jsonb`;
const textPath = (path: string) => sql`${path.split(".")}::text[]`;
const seconds = (s: number) => sql`(${s}::float8 * interval '1 second')`;
const present = (v: Sql) => sql`(${v} IS NOT NULL AND jsonb_typeof(${v}) <> 'null')`;
const none = raw("");

/**
 * A condition on the JSON value `v`. `once`, where given, turns an expression into a column
 * computed once per row (it is used several times).
 */
function operator(op: SegmentOperator | PropertyOperator, v: Sql, c: Compiled, once: (expr: Sql) => Sql = (expr) => expr): Condition {
  const now = c.inputs.now;
  switch (op.type) {
    case "Equals":
      return { cond: sql`coalesce(${v} = ${jsonb(op.value)}, false)`, flips: [] };
    case "NotEquals":
      return { cond: sql`(${present(v)} AND ${v} <> ${jsonb(op.value)})`, flips: [] };
    case "Exists":
      return { cond: present(v), flips: [] };
    case "NotExists":
      return { cond: sql`NOT ${present(v)}`, flips: [] };
    case "GreaterThanOrEqual":
    case "GreaterThan":
    case "LessThan":
    case "LessThanOrEqual": {
      const cmp = raw(NUMBER_COMPARISONS[op.type]);
      return {
        cond: sql`CASE WHEN jsonb_typeof(${v}) = 'number' THEN (${v} #>> '{}')::numeric ${cmp} ${op.value}::numeric ELSE false END`,
        flips: [],
      };
    }
    case "Within": {
      const d = once(sql`tidings_instant(${v})`);
      const w = seconds(op.windowSeconds);
      return {
        cond: sql`coalesce(${d} BETWEEN ${now}::timestamptz - ${w} AND ${now}::timestamptz, false)`,
        // Enters the window at d (a future date), leaves it just after d + w.
        flips: [
          sql`CASE WHEN ${d} > ${now}::timestamptz THEN ${d} WHEN ${d} + ${w} + ${ms} > ${now}::timestamptz THEN ${d} + ${w} + ${ms} END`,
        ],
      };
    }
    case "AbsoluteTimestamp": {
      const cmp = raw(op.direction === "after" ? ">" : "<");
      const instant = new Date(op.absoluteTimestamp).toISOString();
      return { cond: sql`coalesce(tidings_instant(${v}) ${cmp} ${instant}::timestamptz, false)`, flips: [] };
    }
    case "HasBeen":
      throw new Error("HasBeen is compiled by its Trait node");
  }
}

function conditions(conds: PropertyCondition[] | undefined, row: string, c: Compiled): Condition {
  const parts = (conds ?? []).map((x) => operator(x.operator, sql`(${raw(row)}.payload -> 'properties') #> ${textPath(x.path)}`, c));
  const cond = parts.length
    ? join(
        parts.map((x) => x.cond),
        " AND ",
      )
    : raw("true");
  return { cond, flips: parts.flatMap((x) => x.flips) };
}

const least = (xs: Sql[]) => (xs.length === 0 ? raw("NULL::timestamptz") : xs.length === 1 ? xs[0]! : sql`LEAST(${join(xs, ", ")})`);

/**
 * The events of the profiles in `ids` that pass `filter` (a FROM clause fragment, aliased i and
 * e), `since` (a condition on e.event_time, or none) narrowing them further. A full recompute
 * joins them as a set. An incremental one looks each id's events up through the (workspace,
 * identity, time) index, whatever the statistics say (a new workspace, or an event name unseen
 * at the last ANALYZE, looks empty to the planner, which would then as soon scan all of the
 * workspace's events by name or time for every id): LATERAL … OFFSET 0 keeps the lookup per id,
 * the other conditions stay outside it, and the workspace comes from the id's row, a value the
 * planner cannot know, so it costs every index by its average selectivity.
 */
const eventsOf = (c: Compiled, filter: Sql, since = none) =>
  c.scoped
    ? sql`ids i CROSS JOIN LATERAL (SELECT e.* FROM events e
        WHERE e.workspace_id = i.workspace_id AND e.identity_id = i.identity_id${since} OFFSET 0) e WHERE ${filter}`
    : sql`ids i JOIN events e ON e.workspace_id = ${c.inputs.workspaceId} AND e.identity_id = i.identity_id WHERE ${filter}${since}`;

const tracked = (event: string) => sql`e.type = 'track' AND e.event = ${event}::text`;

interface Compiled {
  inputs: SegmentInputs;
  scoped: boolean;
  ctes: Sql[];
  joins: Sql[];
}

function node(n: SegmentNode, byId: Map<string, SegmentNode>, c: Compiled, groups: SubscriptionGroupTypes): Condition {
  const alias = raw(`n${c.ctes.length}`);
  const { workspaceId, segmentId, now } = c.inputs;
  switch (n.type) {
    case "Everyone":
      return { cond: raw("true"), flips: [] };
    case "Trait": {
      if (n.operator.type !== "HasBeen") {
        // OFFSET 0 keeps the planner from substituting the expression back into every use.
        const once = (expr: Sql) => {
          const x = raw(`x${c.joins.length}`);
          c.joins.push(sql`CROSS JOIN LATERAL (SELECT ${expr} AS v OFFSET 0) ${x}`);
          return sql`${x}.v`;
        };
        return operator(n.operator, sql`(p.traits #> ${textPath(n.path)})`, c, once);
      }
      // Since when the trait has held `value`: the earliest identify setting it to the value after
      // the last one setting it to anything else (only identifies carrying the top-level key set it).
      const op = n.operator;
      const value = jsonb(op.value);
      const path = textPath(n.path);
      const setsIt = sql`e.type = 'identify' AND (e.payload -> 'traits') ? ${n.path.split(".")[0]}::text`;
      const toValue = sql`coalesce((e.payload -> 'traits') #> ${path} = ${value}, false)`;
      // An identify setting the value counts if no identify after it set anything else.
      c.ctes.push(sql`${alias} AS (
        SELECT profile_id, min(event_time) FILTER (WHERE to_value AND (last_other IS NULL OR event_time >= last_other)) AS since
        FROM (SELECT i.profile_id, e.event_time, ${toValue} AS to_value,
                max(e.event_time) FILTER (WHERE NOT ${toValue}) OVER (PARTITION BY i.profile_id) AS last_other
              FROM ${eventsOf(c, setsIt)}) x
        GROUP BY profile_id)`);
      c.joins.push(sql`LEFT JOIN ${alias} ON ${alias}.profile_id = p.profile_id`);
      const w = seconds(op.windowSeconds);
      const holds = sql`coalesce((p.traits #> ${path}) = ${value}, false) AND ${alias}.since IS NOT NULL`;
      const cmp = raw(op.comparator === "GTE" ? ">=" : "<");
      return {
        cond: sql`(${holds} AND ${now}::timestamptz - ${alias}.since ${cmp} ${w})`,
        flips: [sql`CASE WHEN ${holds} AND ${alias}.since + ${w} > ${now}::timestamptz THEN ${alias}.since + ${w} END`],
      };
    }
    case "Performed": {
      const props = conditions(n.properties, "e", c);
      // Events before the window can never count again: a full recompute reads only the window
      // (the (workspace_id, event, event_time) index), not every event of that name.
      const window = n.withinSeconds === undefined ? none : sql` AND e.event_time >= ${now}::timestamptz - ${seconds(n.withinSeconds)}`;
      // An event leaves the window just after event_time + withinSeconds.
      const flips = [...props.flips];
      if (n.withinSeconds !== undefined) {
        const expiry = sql`e.event_time + ${seconds(n.withinSeconds)} + ${ms}`;
        flips.push(sql`CASE WHEN ${props.cond} THEN ${expiry} END`);
      }
      c.ctes.push(sql`${alias} AS (
        SELECT i.profile_id, count(*) FILTER (WHERE ${props.cond}) AS n, min(${least(flips)}) AS next_at
        FROM ${eventsOf(c, tracked(n.event), window)}
        GROUP BY i.profile_id)`);
      c.joins.push(sql`LEFT JOIN ${alias} ON ${alias}.profile_id = p.profile_id`);
      const count = sql`coalesce(${alias}.n, 0)`;
      const times = sql`${n.times}::int8`;
      const cond = sql`${count} ${raw(COUNT_COMPARISONS[n.timesOperator])} ${times}`;
      if (props.flips.length > 0) return { cond, flips: [sql`${alias}.next_at`] };
      // Without dated properties, time only lowers the count: an expiry matters only where a
      // lower count could change the result (keeps timers off the users it cannot change).
      const mayChange = n.timesOperator === ">=" ? cond : n.timesOperator === "<" ? sql`NOT (${cond})` : sql`${count} >= ${times}`;
      return { cond, flips: [sql`CASE WHEN ${mayChange} THEN ${alias}.next_at END`] };
    }
    case "LastPerformed": {
      const where = conditions(n.whereProperties, "e", c);
      const has = conditions(n.hasProperties, "e", c);
      c.ctes.push(sql`${alias} AS (
        SELECT DISTINCT ON (i.profile_id) i.profile_id, (${has.cond}) AS ok
        FROM ${eventsOf(c, sql`${tracked(n.event)} AND ${where.cond}`)}
        ORDER BY i.profile_id, e.event_time DESC, e.message_id COLLATE "C" DESC)`);
      c.joins.push(sql`LEFT JOIN ${alias} ON ${alias}.profile_id = p.profile_id`);
      const flips = [...where.flips, ...has.flips];
      if (flips.length > 0) {
        // Dated property conditions can change which event is the latest, or whether it matches.
        c.ctes.push(
          sql`${alias}t AS (SELECT i.profile_id, min(${least(flips)}) AS next_at FROM ${eventsOf(c, tracked(n.event))} GROUP BY i.profile_id)`,
        );
        c.joins.push(sql`LEFT JOIN ${alias}t ON ${alias}t.profile_id = p.profile_id`);
      }
      return { cond: sql`coalesce(${alias}.ok, false)`, flips: flips.length > 0 ? [sql`${alias}t.next_at`] : [] };
    }
    case "And":
    case "Or": {
      const parts = n.children.map((id) => node(byId.get(id)!, byId, c, groups));
      const cond = join(
        parts.map((x) => x.cond),
        n.type === "And" ? " AND " : " OR ",
      );
      return { cond: sql`(${cond})`, flips: parts.flatMap((x) => x.flips) };
    }
    case "Not": {
      const inner = node(byId.get(n.child)!, byId, c, groups);
      return { cond: sql`NOT ${inner.cond}`, flips: inner.flips };
    }
    case "SubscriptionGroup": {
      const type = groups.get(n.subscriptionGroupId);
      if (!type) return { cond: raw("false"), flips: [] };
      const assigned = (subscribed: boolean) => sql`EXISTS (SELECT 1 FROM subscription_assignments s
        WHERE s.workspace_id = ${workspaceId} AND s.subscription_group_id = ${n.subscriptionGroupId}::uuid
          AND s.profile_id = p.profile_id AND s.subscribed = ${raw(String(subscribed))})`;
      return { cond: type === "OptIn" ? assigned(true) : sql`NOT ${assigned(false)}`, flips: [] };
    }
    case "RandomBucket":
      return {
        cond: sql`(('x' || substr(md5(${segmentId} || ':' || p.profile_id), 1, 8))::bit(32)::int8 / 4294967296.0) < ${n.percent}::float8`,
        flips: [],
      };
    case "Manual":
      return {
        cond: sql`EXISTS (SELECT 1 FROM segment_manual_members m
          WHERE m.workspace_id = ${workspaceId} AND m.segment_id = ${segmentId}::uuid AND m.profile_id = p.profile_id)`,
        flips: [],
      };
  }
}

/** Nodes by id (the entry node included). */
export function nodesById(def: SegmentDefinition): Map<string, SegmentNode> {
  const byId = new Map<string, SegmentNode>([[def.entryNode.id, def.entryNode]]);
  for (const n of def.nodes) if (!byId.has(n.id)) byId.set(n.id, n);
  return byId;
}

/** The query of `def` for `inputs`: for the profiles of `inputs.scope`, or every profile when it is null. */
export function compileSegment(def: SegmentDefinition, groups: SubscriptionGroupTypes, inputs: SegmentInputs): Sql {
  const { workspaceId, scope } = inputs;
  const c: Compiled = { inputs, scoped: scope.value !== null, ctes: [], joins: [] };
  const root = node(def.entryNode, nodesById(def), c, groups);
  const inScope = (column: string) => sql`(${scope}::text[] IS NULL OR ${raw(column)} = ANY(${scope}::text[]))`;
  // Every id whose events belong to a profile in scope: the profile's own id and its aliases.
  const ids = sql`ids AS ${raw(c.scoped ? "MATERIALIZED " : "")}(
    SELECT p.workspace_id, p.profile_id, p.profile_id AS identity_id FROM profiles p
    WHERE p.workspace_id = ${workspaceId} AND ${inScope("p.profile_id")}
    UNION ALL
    SELECT a.workspace_id, a.profile_id, a.alias_id FROM profile_aliases a
    WHERE a.workspace_id = ${workspaceId} AND ${inScope("a.profile_id")})`;
  return sql`WITH ${join([ids, ...c.ctes], ",\n")}
    SELECT p.profile_id, ${root.cond} AS member, ${least(root.flips)} AS next_at
    FROM profiles p ${join(c.joins, "\n    ")}
    WHERE p.workspace_id = ${workspaceId} AND ${inScope("p.profile_id")}`;
}

// ---------------------------------------------------------------------------------------
// What a definition depends on

type Maybe = boolean | "maybe";

/** Whether the node can hold for a user with no traits, no events and no assignments. */
function onEmpty(n: SegmentNode, byId: Map<string, SegmentNode>): Maybe {
  switch (n.type) {
    case "Everyone":
      return true;
    case "Trait":
      return n.operator.type === "NotExists";
    case "Performed":
      return n.timesOperator === "<" ? n.times > 0 : n.times === 0;
    case "LastPerformed":
    case "Manual":
      return false;
    case "SubscriptionGroup":
    case "RandomBucket":
      return "maybe";
    case "Not": {
      const inner = onEmpty(byId.get(n.child)!, byId);
      return inner === "maybe" ? "maybe" : !inner;
    }
    case "And":
    case "Or": {
      const parts = n.children.map((id) => onEmpty(byId.get(id)!, byId));
      if (n.type === "And") return parts.includes(false) ? false : parts.includes("maybe") ? "maybe" : true;
      return parts.includes(true) ? true : parts.includes("maybe") ? "maybe" : false;
    }
  }
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
