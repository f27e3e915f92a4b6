// The comparison operators of segment nodes and event properties, as conditions on a JSON value.
import type { PropertyOperator, SegmentOperator } from "@tidings/schema";
import { join, raw, type Sql, sql } from "../../db/sql.ts";

/** A condition on a profile, and the instants (> now) at which it could flip. */
export interface Condition {
  cond: Sql;
  flips: Sql[];
}

export const ms = raw("interval '1 millisecond'");
/** The numeric operators and their SQL comparison (JSON numbers only: anything else is false). */
const NUMBER_COMPARISONS = { GreaterThanOrEqual: ">=", GreaterThan: ">", LessThan: "<", LessThanOrEqual: "<=" } as const;
export const jsonb = (value: unknown) => sql`${JSON.stringify(value)}::jsonb`;
export const seconds = (s: number) => sql`(${s}::float8 * interval '1 second')`;
const present = (v: Sql) => sql`(${v} IS NOT NULL AND jsonb_typeof(${v}) <> 'null')`;
export const always = (cond: Sql): Condition => ({ cond, flips: [] });

export const least = (xs: Sql[]) => (xs.length === 0 ? raw("NULL::timestamptz") : xs.length === 1 ? xs[0]! : sql`LEAST(${join(xs, ", ")})`);

/**
 * A condition on the JSON value `v`. `once`, where given, turns an expression into a column
 * computed once per row (it is used several times).
 */
export function operator(op: SegmentOperator | PropertyOperator, v: Sql, now: Sql, once: (expr: Sql) => Sql = (expr) => expr): Condition {
  switch (op.type) {
    case "Equals":
      return always(sql`coalesce(${v} = ${jsonb(op.value)}, false)`);
    case "NotEquals":
      return always(sql`(${present(v)} AND ${v} <> ${jsonb(op.value)})`);
    case "Exists":
      return always(present(v));
    case "NotExists":
      return always(sql`NOT ${present(v)}`);
    case "GreaterThanOrEqual":
    case "GreaterThan":
    case "LessThan":
    case "LessThanOrEqual": {
      const cmp = raw(NUMBER_COMPARISONS[op.type]);
      return always(sql`CASE WHEN jsonb_typeof(${v}) = 'number' THEN ${v}::numeric ${cmp} ${op.value}::numeric ELSE false END`);
    }
    case "Within": {
      const d = once(sql`tidings_instant(${v})`);
      const w = seconds(op.windowSeconds);
      return {
        cond: sql`coalesce(${d} BETWEEN ${now} - ${w} AND ${now}, false)`,
        // Enters the window at d (a future date), leaves it just after d + w.
        flips: [sql`CASE WHEN ${d} > ${now} THEN ${d} WHEN ${d} + ${w} + ${ms} > ${now} THEN ${d} + ${w} + ${ms} END`],
      };
    }
    case "AbsoluteTimestamp": {
      const cmp = raw(op.direction === "after" ? ">" : "<");
      return always(sql`coalesce(tidings_instant(${v}) ${cmp} ${new Date(op.absoluteTimestamp).toISOString()}::timestamptz, false)`);
    }
    case "HasBeen":
      throw new Error("HasBeen is compiled by its Trait node");
  }
}
