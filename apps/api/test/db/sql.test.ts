import { describe, expect, it } from "vitest";
import { empty, join, param, raw, sql } from "../../src/db/sql.ts";

describe("sql fragments", () => {
  it("number parameters when the whole statement is rendered, in order of appearance", () => {
    const inner = sql`b = ${2} AND c = ${"three"}`;
    const statement = sql`SELECT ${1} WHERE ${inner} AND d = ${[4]}::int[]${empty}`;
    expect(statement.text).toBe("SELECT $1 WHERE b = $2 AND c = $3 AND d = $4::int[]");
    expect(statement.values).toEqual([1, 2, "three", [4]]);
    // The same fragment inside another statement gets that statement's numbers.
    const outer = sql`SELECT ${"x"}, (${inner})`;
    expect(outer.text).toBe("SELECT $1, (b = $2 AND c = $3)");
    expect(outer.values).toEqual(["x", 2, "three"]);
  });

  it("send a named input once, wherever it is used", () => {
    const ws = param("w1");
    const left = sql`workspace_id = ${ws}`;
    const statement = sql`SELECT ${"a"} FROM t WHERE ${left} AND EXISTS (SELECT 1 FROM u WHERE u.workspace_id = ${ws}::uuid)`;
    expect(statement.text).toBe("SELECT $1 FROM t WHERE workspace_id = $2 AND EXISTS (SELECT 1 FROM u WHERE u.workspace_id = $2::uuid)");
    expect(statement.values).toEqual(["a", "w1"]);
    // Equal values of different inputs stay apart.
    expect(sql`${ws} ${param("w1")}`.values).toEqual(["w1", "w1"]);
  });

  it("join fragments and take SQL text only through raw", () => {
    const parts = [sql`a = ${1}`, raw("b IS NULL"), sql`c = ${3}`];
    expect(join(parts, " AND ").text).toBe("a = $1 AND b IS NULL AND c = $2");
    expect(join([], " AND ").text).toBe("");
    // A string interpolated is a value, never SQL.
    expect(sql`SELECT ${"1; DROP TABLE x"}`.text).toBe("SELECT $1");
  });
});
