// One compiler, two scopes: a segment definition becomes one set-based SQL query that
// evaluates it for every user of a workspace (a full recompute) or only for the users a change
// touched (incremental), at an instant given as a parameter. Semantics: docs/segments.md.
//
// Parameters of every compiled query: $1 workspace id, $2 the segment's id (RandomBucket's hash
// and Manual's members), $3 now (timestamptz), $4 the scope (text[] of profile ids, or NULL for
// every profile of the workspace). Values of the definition follow as $5, $6, …
//
// The query returns one row per profile in scope: (profile_id, member, next_at), next_at being
// the next instant after now at which the result could change with no new data (a window
// opening or closing), or NULL.
import { outboxKey } from "../../outbox/index.ts";
import type { PropertyCondition, PropertyOperator, SegmentDefinition, SegmentNode, SegmentOperator } from "@tidings/schema";

export interface CompiledSegment {
  text: string;
  /** Values of $5, $6, … (the first four are the caller's). */
  values: unknown[];
}

export type SubscriptionGroupTypes = ReadonlyMap<string, "OptIn" | "OptOut">;

const FIXED = 4;

class Params {
  readonly values: unknown[] = [];
  add(value: unknown, cast: string): string {
    this.values.push(value);
    return `$${FIXED + this.values.length}::${cast}`;
  }
  json(value: unknown) {
    return this.add(JSON.stringify(value), "jsonb");
  }
  path(path: string) {
    return this.add(path.split("."), "text[]");
  }
}

const ms = "interval '1 millisecond'";
/** The numeric operators and their SQL comparison (JSON numbers only: anything else is false). */
const NUMBER_COMPARISONS = { GreaterThanOrEqual: ">=", GreaterThan: ">", LessThan: "<", LessThanOrEqual: "<=" } as const;
const seconds = (p: Params, s: number) => `(${p.add(s, "float8")} * interval '1 second')`;
const present = (v: string) => `(${v} IS NOT NULL AND jsonb_typeof(${v}) <> 'null')`;

/**
 * A condition on the JSON value `v`, and the instants (> now) at which it could flip. `once`, where
 * given, turns an expression into a column computed once per row (it is used several times).
 */
function operator(
  op: SegmentOperator | PropertyOperator,
  v: string,
  p: Params,
  once: (expr: string) => string = (expr) => expr,
): { cond: string; flips: string[] } {
  switch (op.type) {
    case "Equals":
      return { cond: `coalesce(${v} = ${p.json(op.value)}, false)`, flips: [] };
    case "NotEquals":
      return { cond: `(${present(v)} AND ${v} <> ${p.json(op.value)})`, flips: [] };
    case "Exists":
      return { cond: present(v), flips: [] };
    case "NotExists":
      return { cond: `NOT ${present(v)}`, flips: [] };
    case "GreaterThanOrEqual":
    case "GreaterThan":
    case "LessThan":
    case "LessThanOrEqual": {
      const cmp = NUMBER_COMPARISONS[op.type];
      return {
        cond: `CASE WHEN jsonb_typeof(${v}) = 'number' THEN (${v} #>> '{}')::numeric ${cmp} ${p.add(op.value, "numeric")} ELSE false END`,
        flips: [],
      };
    }
    case "Within": {
      const d = once(`tidings_instant(${v})`);
      const w = seconds(p, op.windowSeconds);
      return {
        cond: `coalesce(${d} BETWEEN $3::timestamptz - ${w} AND $3::timestamptz, false)`,
        // Enters the window at d (a future date), leaves it just after d + w.
        flips: [`CASE WHEN ${d} > $3::timestamptz THEN ${d} WHEN ${d} + ${w} + ${ms} > $3::timestamptz THEN ${d} + ${w} + ${ms} END`],
      };
    }
    case "AbsoluteTimestamp": {
      const cmp = op.direction === "after" ? ">" : "<";
      return {
        cond: `coalesce(tidings_instant(${v}) ${cmp} ${p.add(new Date(op.absoluteTimestamp).toISOString(), "timestamptz")}, false)`,
        flips: [],
      };
    }
    case "HasBeen":
      throw new Error("HasBeen is compiled by its Trait node");
  }
}

function conditions(conds: PropertyCondition[] | undefined, row: string, p: Params) {
  const parts = (conds ?? []).map((c) => operator(c.operator, `(${row}.payload -> 'properties') #> ${p.path(c.path)}`, p));
  return { cond: parts.length ? parts.map((x) => x.cond).join(" AND ") : "true", flips: parts.flatMap((x) => x.flips) };
}

const least = (xs: string[]) => (xs.length === 0 ? "NULL::timestamptz" : xs.length === 1 ? xs[0]! : `LEAST(${xs.join(", ")})`);

/**
 * The events of the profiles in `ids` that pass `filter` (a FROM clause fragment, aliased i and
 * e), `since` (a condition on e.event_time, or "") narrowing them further. A full recompute
 * joins them as a set. An incremental one looks each id's events up through the (workspace,
 * identity, time) index, whatever the statistics say (a new workspace, or an event name unseen
 * at the last ANALYZE, looks empty to the planner, which would then as soon scan all of the
 * workspace's events by name or time for every id): LATERAL … OFFSET 0 keeps the lookup per id,
 * the other conditions stay outside it, and the workspace comes from the id's row, a value the
 * planner cannot know, so it costs every index by its average selectivity.
 */
const eventsOf = (c: Compiled, filter: string, since = "") =>
  c.scoped
    ? `ids i CROSS JOIN LATERAL (SELECT e.* FROM events e
        WHERE e.workspace_id = i.workspace_id AND e.identity_id = i.identity_id${since} OFFSET 0) e WHERE ${filter}`
    : `ids i JOIN events e ON e.workspace_id = $1 AND e.identity_id = i.identity_id WHERE ${filter}${since}`;

const tracked = (p: Params, event: string) => `e.type = 'track' AND e.event = ${p.add(event, "text")}`;

interface Compiled {
  scoped: boolean;
  ctes: string[];
  joins: string[];
}

function node(
  n: SegmentNode,
  byId: Map<string, SegmentNode>,
  p: Params,
  c: Compiled,
  groups: SubscriptionGroupTypes,
): { cond: string; flips: string[] } {
  const alias = `n${c.ctes.length}`;
  switch (n.type) {
    case "Everyone":
      return { cond: "true", flips: [] };
    case "Trait": {
      if (n.operator.type !== "HasBeen") {
        // OFFSET 0 keeps the planner from substituting the expression back into every use.
        const once = (expr: string) => {
          const x = `x${c.joins.length}`;
          c.joins.push(`CROSS JOIN LATERAL (SELECT ${expr} AS v OFFSET 0) ${x}`);
          return `${x}.v`;
        };
        return operator(n.operator, `(p.traits #> ${p.path(n.path)})`, p, once);
      }
      // Since when the trait has held `value`: the earliest identify setting it to the value after
      // the last one setting it to anything else (only identifies carrying the top-level key set it).
      const op = n.operator;
      const value = p.json(op.value);
      const path = p.path(n.path);
      const top = p.add(n.path.split(".")[0], "text");
      const setsIt = `e.type = 'identify' AND (e.payload -> 'traits') ? ${top}`;
      const toValue = `coalesce((e.payload -> 'traits') #> ${path} = ${value}, false)`;
      // An identify setting the value counts if no identify after it set anything else.
      c.ctes.push(`${alias} AS (
        SELECT profile_id, min(event_time) FILTER (WHERE to_value AND (last_other IS NULL OR event_time >= last_other)) AS since
        FROM (SELECT i.profile_id, e.event_time, ${toValue} AS to_value,
                max(e.event_time) FILTER (WHERE NOT ${toValue}) OVER (PARTITION BY i.profile_id) AS last_other
              FROM ${eventsOf(c, setsIt)}) x
        GROUP BY profile_id)`);
      c.joins.push(`LEFT JOIN ${alias} ON ${alias}.profile_id = p.profile_id`);
      const w = seconds(p, op.windowSeconds);
      const holds = `coalesce((p.traits #> ${path}) = ${value}, false) AND ${alias}.since IS NOT NULL`;
      const cmp = op.comparator === "GTE" ? ">=" : "<";
      return {
        cond: `(${holds} AND $3::timestamptz - ${alias}.since ${cmp} ${w})`,
        flips: [`CASE WHEN ${holds} AND ${alias}.since + ${w} > $3::timestamptz THEN ${alias}.since + ${w} END`],
      };
    }
    case "Performed": {
      const props = conditions(n.properties, "e", p);
      // Events before the window can never count again: a full recompute reads only the window
      // (the (workspace_id, event, event_time) index), not every event of that name.
      const window = n.withinSeconds === undefined ? "" : ` AND e.event_time >= $3::timestamptz - ${seconds(p, n.withinSeconds)}`;
      // An event leaves the window just after event_time + withinSeconds.
      const flips = [...props.flips];
      if (n.withinSeconds !== undefined) {
        const expiry = `e.event_time + ${seconds(p, n.withinSeconds)} + ${ms}`;
        flips.push(`CASE WHEN ${props.cond} THEN ${expiry} END`);
      }
      c.ctes.push(`${alias} AS (
        SELECT i.profile_id, count(*) FILTER (WHERE ${props.cond}) AS n, min(${least(flips)}) AS next_at
        FROM ${eventsOf(c, tracked(p, n.event), window)}
        GROUP BY i.profile_id)`);
      c.joins.push(`LEFT JOIN ${alias} ON ${alias}.profile_id = p.profile_id`);
      const count = `coalesce(${alias}.n, 0)`;
      const times = p.add(n.times, "int8");
      const cond = `${count} ${n.timesOperator} ${times}`;
      if (props.flips.length > 0) return { cond, flips: [`${alias}.next_at`] };
      // Without dated properties, time only lowers the count: an expiry matters only where a
      // lower count could change the result (keeps timers off the users it cannot change).
      const mayChange = n.timesOperator === ">=" ? cond : n.timesOperator === "<" ? `NOT (${cond})` : `${count} >= ${times}`;
      return { cond, flips: [`CASE WHEN ${mayChange} THEN ${alias}.next_at END`] };
    }
    case "LastPerformed": {
      const where = conditions(n.whereProperties, "e", p);
      const has = conditions(n.hasProperties, "e", p);
      c.ctes.push(`${alias} AS (
        SELECT DISTINCT ON (i.profile_id) i.profile_id, (${has.cond}) AS ok
        FROM ${eventsOf(c, `${tracked(p, n.event)} AND ${where.cond}`)}
        ORDER BY i.profile_id, e.event_time DESC, e.message_id COLLATE "C" DESC)`);
      c.joins.push(`LEFT JOIN ${alias} ON ${alias}.profile_id = p.profile_id`);
      const flips = [...where.flips, ...has.flips];
      if (flips.length > 0) {
        // Dated property conditions can change which event is the latest, or whether it matches.
        c.ctes.push(
          `${alias}t AS (SELECT i.profile_id, min(${least(flips)}) AS next_at FROM ${eventsOf(c, tracked(p, n.event))} GROUP BY i.profile_id)`,
        );
        c.joins.push(`LEFT JOIN ${alias}t ON ${alias}t.profile_id = p.profile_id`);
      }
      return { cond: `coalesce(${alias}.ok, false)`, flips: flips.length > 0 ? [`${alias}t.next_at`] : [] };
    }
    case "And":
    case "Or": {
      const parts = n.children.map((id) => node(byId.get(id)!, byId, p, c, groups));
      return { cond: `(${parts.map((x) => x.cond).join(n.type === "And" ? " AND " : " OR ")})`, flips: parts.flatMap((x) => x.flips) };
    }
    case "Not": {
      const inner = node(byId.get(n.child)!, byId, p, c, groups);
      return { cond: `NOT ${inner.cond}`, flips: inner.flips };
    }
    case "SubscriptionGroup": {
      const type = groups.get(n.subscriptionGroupId);
      if (!type) return { cond: "false", flips: [] };
      const assigned = (subscribed: boolean) => `EXISTS (SELECT 1 FROM subscription_assignments s
        WHERE s.workspace_id = $1 AND s.subscription_group_id = ${p.add(n.subscriptionGroupId, "uuid")}
          AND s.profile_id = p.profile_id AND s.subscribed = ${subscribed})`;
      return { cond: type === "OptIn" ? assigned(true) : `NOT ${assigned(false)}`, flips: [] };
    }
    case "RandomBucket":
      return {
        cond: `(('x' || substr(md5($2 || ':' || p.profile_id), 1, 8))::bit(32)::int8 / 4294967296.0) < ${p.add(n.percent, "float8")}`,
        flips: [],
      };
    case "Manual":
      return {
        cond: `EXISTS (SELECT 1 FROM segment_manual_members m WHERE m.workspace_id = $1 AND m.segment_id = $2::uuid AND m.profile_id = p.profile_id)`,
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

/** `scoped`: the query will be run for a list of profiles ($4 not NULL), not the whole workspace. */
export function compileSegment(def: SegmentDefinition, groups: SubscriptionGroupTypes, scoped = false): CompiledSegment {
  const p = new Params();
  const c: Compiled = { scoped, ctes: [], joins: [] };
  const root = node(def.entryNode, nodesById(def), p, c, groups);
  // Every id whose events belong to a profile in scope: the profile's own id and its aliases.
  const ids = `ids AS ${scoped ? "MATERIALIZED " : ""}(
    SELECT p.workspace_id, p.profile_id, p.profile_id AS identity_id FROM profiles p
    WHERE p.workspace_id = $1 AND ($4::text[] IS NULL OR p.profile_id = ANY($4::text[]))
    UNION ALL
    SELECT a.workspace_id, a.profile_id, a.alias_id FROM profile_aliases a
    WHERE a.workspace_id = $1 AND ($4::text[] IS NULL OR a.profile_id = ANY($4::text[])))`;
  const text = `WITH ${[ids, ...c.ctes].join(",\n")}
    SELECT p.profile_id, ${root.cond} AS member, ${least(root.flips)} AS next_at
    FROM profiles p ${c.joins.join("\n    ")}
    WHERE p.workspace_id = $1 AND ($4::text[] IS NULL OR p.profile_id = ANY($4::text[]))`;
  return { text, values: p.values };
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
