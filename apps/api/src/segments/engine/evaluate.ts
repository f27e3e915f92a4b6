// Applies a compiled segment to a scope in one statement: the members it finds enter, the ones
// it no longer finds leave (each recorded with its time, and enters of a segment a journey uses
// also as journey signals: the journey runtime's entries and wake-ups), the per-user next instants are kept,
// and the segment's member count follows — all in the statement, so it is all or nothing.
import type { SegmentDefinition } from "@tidings/schema";
import type pg from "pg";
import { CLEAR_FAILURE, DefinitionError } from "../../db/failing.ts";
import { ident, join, type Param, raw, type Sql, sql } from "../../db/sql.ts";
import { compileSegment, type SubscriptionGroupTypes, segmentInputs, storedSegmentDefinition } from "./compile.ts";
import type { SegmentInputs } from "./inputs.ts";
import type { ScopeCopy } from "./compile-nodes.ts";
import { errorText } from "../../lib/errors.ts";

export interface SegmentToEvaluate {
  workspaceId: string;
  id: string;
  definition: SegmentDefinition;
}

export interface Evaluated {
  entered: number;
  exited: number;
  /** Enters recorded for the journey runtime (the segment is used by a journey). */
  signals: number;
}

type Queryable = Pick<pg.PoolClient, "query">;

/** Ids in a scope per row of the segment above which its rows are read by range, not looked up one by one (scopedRows). */
const RANGE_READ_SHARE = 1 / 8;

/**
 * The rows of `table` (keyed by workspace, segment and profile) of the segment `id` for the
 * profiles `ids` (text[]), as a query of their `columns` (names, comma-separated): one
 * primary-key lookup per id. A condition `profile_id =
 * ANY(ids)` was planned through the (workspace, profile) index, reading every segment's rows of
 * those profiles (about twice as slow, and more so with more segments). When the ids are many
 * beside the segment's rows (`rows`, as last known: at most 1 / RANGE_READ_SHARE rows per id), the
 * segment's rows are read as one range of the primary key instead, each kept if its profile is
 * one of `ids` (a hashed test; figures in docs/scaling.md).
 * Either way through the primary key: the workspace is a value the planner learns only when the
 * statement runs (`onlyIn`).
 */
export const scopedRows = (
  table: string,
  columns: string,
  ws: Param | string,
  id: Param | string,
  ids: Param | string[],
  range: { ids: number; rows: number } | null = null,
) =>
  range !== null && range.ids >= range.rows * RANGE_READ_SHARE
    ? sql`SELECT ${names(columns)} FROM (SELECT ${names(columns)} FROM ${ident(table)} t
        WHERE ${onlyIn(ws)} AND t.segment_id = ${id}::uuid OFFSET 0) t WHERE t.profile_id = ANY(${ids}::text[])`
    : sql`SELECT ${names(columns)} FROM unnest(${ids}::text[]) x CROSS JOIN LATERAL (SELECT ${names(columns)} FROM ${ident(table)} t
    WHERE ${onlyIn(ws)} AND t.segment_id = ${id}::uuid AND t.profile_id = x LIMIT 1) t`;

/** The comma-separated column names `columns`, each checked and quoted (db/sql.ts `ident`). */
const names = (columns: string) =>
  join(
    columns.split(",").map((c) => ident(c.trim())),
    ", ",
  );

/**
 * `t.workspace_id = ws`, with `ws` a value the planner learns only when the statement runs, so
 * that it costs each index by its average selectivity. With the value itself, a workspace newer
 * than the table's statistics looks empty, and every index leading with the workspace then
 * looks as cheap as the primary key (what that cost: docs/scaling.md).
 */
const onlyIn = (ws: Param | string) => sql`t.workspace_id = (SELECT ${ws}::uuid)`;

/**
 * A capability's record of a segment's enters, in the evaluation's own statement (all or
 * nothing with it): a data-modifying statement over `entered` (a relation of `profile_id`s)
 * returning one row per record it wrote. The journey runtime's signals are one.
 */
export type EnterHook = (enters: { workspaceId: Param; segmentId: Param; at: Param; entered: Sql }) => Sql;

export interface EvaluateOptions {
  /** A full recompute (`scope` null) sets these and `lastRecomputed`, if the stored definition is still `definitionUpdatedAt`. */
  full?: { definitionUpdatedAt: Date; dependsOn: string[] };
  /** With a scope: a drain's copy of the scope's profiles and of their events the definition reads (scope-events.ts). */
  copy?: ScopeCopy;
  /** With a scope: the segment's member count, as last known (how its members are read: scopedRows). */
  memberCount?: number;
  /** What records the enters besides the engine (their rows are counted as `signals`). */
  enterHooks?: readonly EnterHook[];
}

/**
 * Evaluates `segment` at `now` for `scope` (profile ids; ids that are no longer profiles leave),
 * or for the whole workspace when `scope` is null — then `lastRecomputed` is set too, if the
 * stored definition is still `full.definitionUpdatedAt` (a newer one is recomputed again).
 */
export async function evaluateSegment(
  db: Queryable,
  segment: SegmentToEvaluate,
  groups: SubscriptionGroupTypes,
  now: Date,
  scope: string[] | null,
  { full, copy, memberCount, enterHooks = [] }: EvaluateOptions = {},
): Promise<Evaluated> {
  const inputs = segmentInputs(segment.workspaceId, segment.id, now, scope);
  const { workspaceId: ws, segmentId: id, now: at } = inputs;
  let compiledSegment: ReturnType<typeof compileSegment>;
  try {
    compiledSegment = compileSegment(segment.definition, groups, inputs, copy ?? null);
  } catch (err) {
    throw new DefinitionError(`the definition does not compile: ${errorText(err)}`);
  }
  const { query: compiled, timed } = compiledSegment;
  const { rowsOf, removing } = segmentRows(inputs, scope);
  const counts = full
    ? sql`member_count = (SELECT count(*) FROM r WHERE member), last_recomputed = now(), depends_on = ${full.dependsOn}::text[], ${raw(CLEAR_FAILURE)}`
    : sql`member_count = member_count + (SELECT count(*) FROM ins) - (SELECT count(*) FROM del)`;
  const current = full ? sql` AND definition_updated_at = ${full.definitionUpdatedAt}::timestamptz` : raw("");
  // A definition without windows keeps no timers, so a scoped evaluation of one leaves
  // segment_timers alone (no lookup per user): a definition that loses its windows is recomputed
  // in full, which removes them all (one left meanwhile only has its user evaluated once more when it fires).
  const keepTimers = scope !== null && !timed ? raw("") : timerCtes(inputs, rowsOf, removing);
  // The size after a change is kept per hour (segment_sizes: the size history).
  // Only members and timed rows matter below (a full recompute holds those, not every profile).
  // Rows are written only while the segment exists, held (FOR KEY SHARE) until the statement's
  // transaction ends (its rows have no foreign key: schema.prisma). Enters are recorded in the
  // order of their ids, as exits are, as plain inserts: a segment's evaluations are serialized
  // (the workspace's lock); were two ever to overlap, the later fails on the primary key and its
  // refresh is retried (ON CONFLICT DO NOTHING would cost a fifth of the insert: docs/scaling.md).
  const hooks = enterCtes(enterHooks, { workspaceId: ws, segmentId: id, at, entered: raw("ins") });
  const statement = sql`WITH r AS MATERIALIZED (SELECT * FROM (${compiled}) x WHERE member OR next_at IS NOT NULL),
    members AS MATERIALIZED (${rowsOf("segment_memberships", "profile_id", memberCount)}),
    segment AS MATERIALIZED (SELECT 1 FROM segments WHERE workspace_id = ${ws} AND id = ${id}::uuid FOR KEY SHARE),
    ins AS (INSERT INTO segment_memberships (workspace_id, segment_id, profile_id, entered_at)
      SELECT ${ws}, ${id}::uuid, profile_id, ${at} FROM (SELECT profile_id FROM r WHERE member EXCEPT SELECT profile_id FROM members) n
      WHERE EXISTS (SELECT FROM segment)
      ORDER BY profile_id RETURNING profile_id),
    del AS (${removing("segment_memberships", sql`SELECT profile_id FROM members EXCEPT SELECT profile_id FROM r WHERE member`)}
      RETURNING t.profile_id),
    changes AS (INSERT INTO segment_membership_changes (workspace_id, segment_id, profile_id, entered, at)
      SELECT ${ws}, ${id}::uuid, profile_id, true, ${at} FROM ins
      UNION ALL SELECT ${ws}, ${id}::uuid, profile_id, false, ${at} FROM del)${hooks.ctes}${keepTimers},
    counted AS (UPDATE segments SET ${counts}
      WHERE workspace_id = ${ws} AND id = ${id}::uuid${current} RETURNING member_count),
    sized AS (INSERT INTO segment_sizes (workspace_id, segment_id, hour, size)
      SELECT ${ws}, ${id}::uuid, date_trunc('hour', ${at}::timestamptz, 'UTC'), member_count FROM counted
      WHERE ${full ? raw("true") : raw("EXISTS (SELECT FROM ins) OR EXISTS (SELECT FROM del)")}
      ON CONFLICT (workspace_id, segment_id, hour) DO UPDATE SET size = excluded.size)
    SELECT (SELECT count(*) FROM ins)::int AS entered, (SELECT count(*) FROM del)::int AS exited,
      ${hooks.count}::int AS signals`;
  const { rows } = await db.query<Evaluated>(statement);
  return rows[0]!;
}

type RowsOf = (table: string, columns: string, rows?: number) => Sql;
type Removing = (table: string, ids: Sql) => Sql;

/**
 * Each table's rows of the segment in scope (all of the segment's, for a full recompute), read
 * once; what changes is found by set operations against them (hashed, linear whatever the planner
 * believes of the sizes: an anti-join against r, on the estimates of a new workspace, became a
 * nested loop over both), and only that is written. Rows that stay are not touched (an upsert
 * would lock each one, and write that to the WAL).
 */
function segmentRows(inputs: SegmentInputs, scope: string[] | null): { rowsOf: RowsOf; removing: Removing } {
  const { workspaceId: ws, segmentId: id } = inputs;
  return {
    rowsOf: (table, columns, rows) =>
      scope === null
        ? sql`SELECT ${names(columns)} FROM ${ident(table)} t WHERE t.workspace_id = ${ws} AND t.segment_id = ${id}::uuid`
        : scopedRows(table, columns, ws, id, inputs.scope, rows === undefined ? null : { ids: scope.length, rows }),
    removing: (table, ids) =>
      sql`DELETE FROM ${ident(table)} t WHERE ${onlyIn(ws)} AND t.segment_id = ${id}::uuid AND t.profile_id = ANY (ARRAY(${ids}))`,
  };
}

/** The per-user instants at which the result could flip, kept in segment_timers (CTEs of the evaluation). */
function timerCtes(inputs: SegmentInputs, rowsOf: RowsOf, removing: Removing): Sql {
  const { workspaceId: ws, segmentId: id } = inputs;
  return sql`,
    timed AS MATERIALIZED (${rowsOf("segment_timers", "profile_id, due_at")}),
    timers AS (INSERT INTO segment_timers (workspace_id, segment_id, profile_id, due_at)
      SELECT ${ws}, ${id}::uuid, profile_id, next_at FROM (
        SELECT profile_id, next_at::timestamptz(3) FROM r WHERE next_at IS NOT NULL EXCEPT SELECT profile_id, due_at FROM timed) n
      WHERE EXISTS (SELECT FROM segment)
      ON CONFLICT (workspace_id, segment_id, profile_id) DO UPDATE SET due_at = EXCLUDED.due_at),
    untimed AS (${removing("segment_timers", sql`SELECT profile_id FROM timed EXCEPT SELECT profile_id FROM r WHERE next_at IS NOT NULL`)})`;
}

/** The enter hooks as CTEs of the evaluation (`, hook0 AS (…)`…), and the count of what they wrote. */
function enterCtes(hooks: readonly EnterHook[], enters: Parameters<EnterHook>[0]) {
  if (hooks.length === 0) return { ctes: raw(""), count: raw("0") };
  const names = hooks.map((_, i) => raw(`hook${i}`));
  return {
    ctes: join(
      hooks.map(
        (hook, i) => sql`,
    ${names[i]!} AS (${hook(enters)})`,
      ),
      "",
    ),
    count: sql`(${join(
      names.map((n) => sql`(SELECT count(*) FROM ${n})`),
      " + ",
    )})`,
  };
}

/** The members of a definition at `now` (`seed` stands for the segment's id), as a query to select from. */
export function membersQuery(
  definition: SegmentDefinition,
  groups: SubscriptionGroupTypes,
  workspaceId: string,
  seed: string,
  now: Date,
): Sql {
  return sql`SELECT profile_id FROM (${compileSegment(definition, groups, segmentInputs(workspaceId, seed, now, null)).query}) r WHERE member`;
}

/** The workspace's subscription groups and their types (what SubscriptionGroup nodes compile with). */
export async function subscriptionGroupTypes(db: Queryable, workspaceId: string): Promise<SubscriptionGroupTypes> {
  const { rows } = await db.query<{ id: string; type: "OptIn" | "OptOut" }>(
    sql`SELECT id, type::text AS type FROM subscription_groups WHERE workspace_id = ${workspaceId}`,
  );
  return new Map(rows.map((r) => [r.id, r.type]));
}

/**
 * Which of `userIds` (profile ids) are members of the stored segment at `now`, evaluated from the
 * data itself: every event committed before is counted, however far behind the engine is. A
 * segment that no longer exists has no members.
 */
export async function membersNow(
  db: Queryable,
  workspaceId: string,
  segmentId: string,
  userIds: string[],
  now: Date,
): Promise<Set<string>> {
  if (userIds.length === 0) return new Set();
  const { rows } = await db.query<{ id: string; definition: unknown }>(
    sql`SELECT id, definition FROM segments WHERE workspace_id = ${workspaceId} AND id = ${segmentId}`,
  );
  if (rows.length === 0) return new Set();
  const definition = storedSegmentDefinition(rows[0]!);
  const inputs = segmentInputs(workspaceId, segmentId, now, userIds);
  const members = await db.query<{ profile_id: string }>(
    sql`SELECT profile_id FROM (${compileSegment(definition, await subscriptionGroupTypes(db, workspaceId), inputs).query}) r WHERE member`,
  );
  return new Set(members.rows.map((r) => r.profile_id));
}
