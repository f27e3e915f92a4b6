// One compiler per kind of segment node: the condition on a profile row `p` it stands for, and
// the instants (> now) at which that condition could flip with no new data. Nodes over events or
// trait history add their CTEs and joins to the query through the scope (compile.ts builds it).
import type { PropertyCondition, SegmentNode, SegmentNodeType, SegmentOperator } from "@tidings/schema";
import { join, raw, type Sql, sql } from "../../db/sql.ts";
import type { SegmentInputs, SubscriptionGroupTypes } from "./inputs.ts";
import { always, type Condition, jsonb, least, ms, operator, seconds } from "./operators.ts";

/** A drain's copy of what the profiles it evaluates are evaluated on (scope-events.ts). */
export interface ScopeCopy {
  /**
   * Every event the definition reads of the profiles in scope, with the profile each belongs to:
   * not its payload, only what segments read of it (`properties` of a track, `traits` of an identify).
   */
  events: Sql;
  /** The profiles in scope (profile_id, traits), read instead of `profiles`. */
  profiles: Sql;
  /**
   * It holds the profiles in scope only. Otherwise (other segments of the drain read it for more
   * profiles) the query and each node keep their scope's rows: rows of other profiles would only
   * be evaluated and aggregated for nothing.
   */
  exact: boolean;
}

/** What a node compiler reads and adds besides the node itself. */
export interface NodeScope {
  readonly inputs: SegmentInputs;
  /** The query runs for a list of profiles (an incremental evaluation), not the whole workspace. */
  readonly scoped: boolean;
  /** A drain's copy of the scope's events and profiles, read instead of `events` and `profiles`; or null. */
  readonly copy: ScopeCopy | null;
  readonly groups: SubscriptionGroupTypes;
  /** The name of the node's CTE, unique in the query (`<alias>t` for a second one). */
  readonly alias: Sql;
  /** The condition of the node `id` (And, Or, Not). */
  child(id: string): Condition;
  /** Adds `<name> AS (…)` to the query's WITH list. */
  cte(definition: Sql): void;
  /** Adds a join to the profile row `p`. */
  join(clause: Sql): void;
  /** `expr` as a column computed once per profile row (it is used several times). */
  once(expr: Sql): Sql;
}

type NodeOf<K extends SegmentNodeType> = Extract<SegmentNode, { type: K }>;
export type NodeCompiler<K extends SegmentNodeType> = (n: NodeOf<K>, at: NodeScope) => Condition;

const none = raw("");
/** A Performed node's comparisons of its count with `times`. */
const COUNT_COMPARISONS = { "=": "=", ">=": ">=", "<": "<" } as const;
const textPath = (path: string) => sql`${path.split(".")}::text[]`;

/** Every condition on the properties of the event `e`. */
function properties(conds: PropertyCondition[] | undefined, at: NodeScope): Condition {
  const now = sql`${at.inputs.now}::timestamptz`;
  // One lookup from the payload down (not a copy of the properties object first, per condition
  // and row); a drain's copy holds the properties alone.
  const lookup = (path: string) =>
    at.copy ? sql`(e.properties #> ${textPath(path)})` : sql`(e.payload #> ${textPath(`properties.${path}`)})`;
  const parts = (conds ?? []).map((x) => operator(x.operator, lookup(x.path), now));
  const cond = parts.length
    ? join(
        parts.map((x) => x.cond),
        " AND ",
      )
    : raw("true");
  return { cond, flips: parts.flatMap((x) => x.flips) };
}

/**
 * The events of the profiles in scope that pass `filter` (a FROM clause fragment: rows `e`, an
 * event and the `profile_id` it belongs to), `since` (a condition on e.event_time, or none)
 * narrowing them further. A full recompute joins `ids` and `events` as sets. An incremental one
 * looks each id's events up through the (workspace, identity, time) index, whatever the
 * statistics say (a new workspace, or an event name unseen at the last ANALYZE, looks empty to
 * the planner, which would then as soon scan all of the workspace's events by name or time for
 * every id): LATERAL … OFFSET 0 keeps the lookup per id, the other conditions stay outside it,
 * and the workspace comes from the id's row, a value the planner cannot know, so it costs every
 * index by its average selectivity. `newest` (a node needing only each user's newest matching
 * events: `newestNeeded`) reads, of each id, the events passing `filter` newest first and stops
 * after that many: a lookup whose cost does not grow with the user's history. A drain evaluating
 * several segments reading the same events, not all of them bounded so, has copied those events
 * once, with their profile ids (`at.copy`, scope-events.ts): they are read from the copy, all of them.
 */
const eventsOf = (at: NodeScope, filter: Sql, since = none, newest?: number) => {
  if (at.copy) {
    const mine = at.copy.exact ? none : sql` AND e.profile_id = ANY(${at.inputs.scope}::text[])`;
    return sql`${at.copy.events} e WHERE ${filter}${mine}${since}`;
  }
  // One id's events, behind the fence.
  const own = (order: Sql) => sql`SELECT i.profile_id, e.* FROM events e
        WHERE e.workspace_id = i.workspace_id AND e.identity_id = i.identity_id${since}${order} OFFSET 0`;
  // The id's events newest first (the index read backwards: the id's workspace and identity are
  // fixed inside the fence, so its order is by time), taken until `newest` pass the filter, and
  // any more of the same instant as the last (no sort: ties are the caller's to break).
  if (at.scoped && newest !== undefined)
    return sql`ids i CROSS JOIN LATERAL (SELECT * FROM (${own(raw(" ORDER BY e.event_time DESC"))}) e
        WHERE ${filter} ORDER BY e.event_time DESC FETCH FIRST (${newest}::int8) ROWS WITH TIES) e`;
  if (at.scoped) return sql`ids i CROSS JOIN LATERAL (${own(none)}) e WHERE ${filter}`;
  return sql`(SELECT i.profile_id, e.* FROM ids i JOIN events e ON e.workspace_id = ${at.inputs.workspaceId} AND e.identity_id = i.identity_id) e
        WHERE ${filter}${since}`;
};

/** Whether any of the conditions changes with time alone (a date within a window). */
const dated = (conds: PropertyCondition[] | undefined) => (conds ?? []).some((c) => c.operator.type === "Within");

/**
 * How many of each user's newest matching events decide a node's value now and at every later
 * instant with no new data, and the next instant it can change (null: all of them may matter).
 * A LastPerformed reads its latest matching event. A count compared with `times` (capped there,
 * or one above for `=`) needs only the newest that many: the events still in a window are always
 * the newest ones, so the capped count at any instant, and the first instant it drops, are those
 * of the newest `times` (+ 1). A dated property condition can make an older event match later:
 * then every event may matter.
 */
export function newestNeeded(n: SegmentNode): number | null {
  if (n.type === "LastPerformed") return dated(n.whereProperties) || dated(n.hasProperties) ? null : 1;
  if (n.type === "Performed") return dated(n.properties) ? null : n.timesOperator === "=" ? n.times + 1 : n.times;
  return null;
}

const tracked = (event: string) => sql`e.type = 'track' AND e.event = ${event}::text`;

const joinAlias = (alias: Sql) => sql`LEFT JOIN ${alias} ON ${alias}.profile_id = p.profile_id`;

/**
 * A Trait node with HasBeen: since when the trait has held `value`, the earliest identify setting
 * it to the value after the last one setting it to anything else (only identifies carrying the
 * top-level key set it).
 */
function hasBeen(n: NodeOf<"Trait">, op: Extract<SegmentOperator, { type: "HasBeen" }>, at: NodeScope): Condition {
  const { alias } = at;
  const now = sql`${at.inputs.now}::timestamptz`;
  const value = jsonb(op.value);
  const path = textPath(n.path);
  // A drain's copy holds the identify's traits alone.
  const traits = at.copy ? sql`e.traits` : sql`(e.payload -> 'traits')`;
  const setsIt = sql`e.type = 'identify' AND ${traits} ? ${n.path.split(".")[0]}::text`;
  const toValue = sql`coalesce(${traits} #> ${path} = ${value}, false)`;
  // An identify setting the value counts if no identify after it set anything else.
  at.cte(sql`${alias} AS (
        SELECT profile_id, min(event_time) FILTER (WHERE to_value AND (last_other IS NULL OR event_time >= last_other)) AS since
        FROM (SELECT e.profile_id, e.event_time, ${toValue} AS to_value,
                max(e.event_time) FILTER (WHERE NOT ${toValue}) OVER (PARTITION BY e.profile_id) AS last_other
              FROM ${eventsOf(at, setsIt)}) x
        GROUP BY profile_id)`);
  at.join(joinAlias(alias));
  const w = seconds(op.windowSeconds);
  const holds = sql`coalesce((p.traits #> ${path}) = ${value}, false) AND ${alias}.since IS NOT NULL`;
  const cmp = raw(op.comparator === "GTE" ? ">=" : "<");
  return {
    cond: sql`(${holds} AND ${now} - ${alias}.since ${cmp} ${w})`,
    flips: [sql`CASE WHEN ${holds} AND ${alias}.since + ${w} > ${now} THEN ${alias}.since + ${w} END`],
  };
}

/** Keyed by node type: a kind of node without a compiler does not type-check. */
export const nodeCompilers: { [K in SegmentNodeType]: NodeCompiler<K> } = {
  Everyone: () => always(raw("true")),
  Trait: (n, at) => {
    if (n.operator.type === "HasBeen") return hasBeen(n, n.operator, at);
    return operator(n.operator, sql`(p.traits #> ${textPath(n.path)})`, sql`${at.inputs.now}::timestamptz`, (expr) => at.once(expr));
  },
  Performed: (n, at) => {
    const { alias } = at;
    const now = sql`${at.inputs.now}::timestamptz`;
    const props = properties(n.properties, at);
    // Events before the window can never count again: a full recompute reads only the window
    // (the (workspace_id, event, event_time) index), not every event of that name.
    const window = n.withinSeconds === undefined ? none : sql` AND e.event_time >= ${now} - ${seconds(n.withinSeconds)}`;
    // An event leaves the window just after event_time + withinSeconds.
    const flips = [...props.flips];
    if (n.withinSeconds !== undefined) {
      const expiry = sql`e.event_time + ${seconds(n.withinSeconds)} + ${ms}`;
      flips.push(sql`CASE WHEN ${props.cond} THEN ${expiry} END`);
    }
    // Reading each user's newest matching events only, the filter takes the properties too.
    const newest = newestNeeded(n) ?? undefined;
    const filter = newest === undefined ? tracked(n.event) : sql`${tracked(n.event)} AND ${props.cond}`;
    at.cte(sql`${alias} AS (
        SELECT e.profile_id, count(*) FILTER (WHERE ${props.cond}) AS n, min(${least(flips)}) AS next_at
        FROM ${eventsOf(at, filter, window, newest)}
        GROUP BY e.profile_id)`);
    at.join(joinAlias(alias));
    const count = sql`coalesce(${alias}.n, 0)`;
    const times = sql`${n.times}::int8`;
    const cond = sql`${count} ${raw(COUNT_COMPARISONS[n.timesOperator])} ${times}`;
    // No window and no dated properties: next_at is always NULL (nothing to keep a timer for).
    if (flips.length === 0) return always(cond);
    if (props.flips.length > 0) return { cond, flips: [sql`${alias}.next_at`] };
    // Without dated properties, time only lowers the count: an expiry matters only where a
    // lower count could change the result (keeps timers off the users it cannot change).
    const mayChange = n.timesOperator === ">=" ? cond : n.timesOperator === "<" ? sql`NOT (${cond})` : sql`${count} >= ${times}`;
    return { cond, flips: [sql`CASE WHEN ${mayChange} THEN ${alias}.next_at END`] };
  },
  LastPerformed: (n, at) => {
    const { alias } = at;
    const where = properties(n.whereProperties, at);
    const has = properties(n.hasProperties, at);
    // Grouping needs only equality: sorted by bytes (COLLATE "C"), the cheapest order.
    at.cte(sql`${alias} AS (
        SELECT DISTINCT ON (e.profile_id COLLATE "C") e.profile_id, (${has.cond}) AS ok
        FROM ${eventsOf(at, sql`${tracked(n.event)} AND ${where.cond}`, none, newestNeeded(n) ?? undefined)}
        ORDER BY e.profile_id COLLATE "C", e.event_time DESC, e.message_id COLLATE "C" DESC)`);
    at.join(joinAlias(alias));
    const flips = [...where.flips, ...has.flips];
    if (flips.length === 0) return always(sql`coalesce(${alias}.ok, false)`);
    // Dated property conditions can change which event is the latest, or whether it matches.
    const timed = sql`${alias}t`;
    at.cte(
      sql`${timed} AS (SELECT e.profile_id, min(${least(flips)}) AS next_at FROM ${eventsOf(at, tracked(n.event))} GROUP BY e.profile_id)`,
    );
    at.join(joinAlias(timed));
    return { cond: sql`coalesce(${alias}.ok, false)`, flips: [sql`${timed}.next_at`] };
  },
  And: (n, at) => junction(n.children, " AND ", at),
  Or: (n, at) => junction(n.children, " OR ", at),
  Not: (n, at) => {
    const inner = at.child(n.child);
    return { cond: sql`NOT ${inner.cond}`, flips: inner.flips };
  },
  SubscriptionGroup: (n, at) => {
    const type = at.groups.get(n.subscriptionGroupId);
    if (!type) return always(raw("false"));
    const assigned = (subscribed: boolean) => sql`EXISTS (SELECT 1 FROM subscription_assignments s
        WHERE s.workspace_id = ${at.inputs.workspaceId} AND s.subscription_group_id = ${n.subscriptionGroupId}::uuid
          AND s.profile_id = p.profile_id AND s.subscribed = ${raw(String(subscribed))})`;
    return always(type === "OptIn" ? assigned(true) : sql`NOT ${assigned(false)}`);
  },
  RandomBucket: (n, at) =>
    always(
      sql`(('x' || substr(md5(${at.inputs.segmentId} || ':' || p.profile_id), 1, 8))::bit(32)::int8 / 4294967296.0) < ${n.percent}::float8`,
    ),
  Manual: (_, at) =>
    always(sql`EXISTS (SELECT 1 FROM segment_manual_members m
          WHERE m.workspace_id = ${at.inputs.workspaceId} AND m.segment_id = ${at.inputs.segmentId}::uuid AND m.profile_id = p.profile_id)`),
};

function junction(children: string[], separator: " AND " | " OR ", at: NodeScope): Condition {
  const parts = children.map((id) => at.child(id));
  const cond = join(
    parts.map((x) => x.cond),
    separator,
  );
  return { cond: sql`(${cond})`, flips: parts.flatMap((x) => x.flips) };
}

/** The condition of node `n`, compiled by the compiler of its kind. */
export const compileNode = <K extends SegmentNodeType>(n: NodeOf<K>, at: NodeScope): Condition =>
  (nodeCompilers[n.type] as NodeCompiler<K>)(n, at);
