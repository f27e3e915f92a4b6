// How an incremental evaluation reads a segment's rows for its scope (scopedRows,
// src/segments/engine/evaluate.ts): looked up one id at a time, or, when the ids are many beside
// the segment's rows, read as one range of the segment and kept by id. Both must find the same rows.
import { describe, expect, it } from "vitest";
import { createWorkspace } from "../../src/auth/service.ts";
import { scopedRows } from "../../src/segments/engine/evaluate.ts";

import { testDatabase } from "./support.ts";

const t = testDatabase();

const isRange = (q: { text: string }) => !q.text.includes("LATERAL");

describe("a segment's rows for a scope", () => {
  it("are read by range once the ids are at least an eighth of the rows, looked up below that", () => {
    const q = (ids: number, rows: number | null) =>
      scopedRows("segment_memberships", "profile_id", "w", "s", ["a"], rows === null ? null : { ids, rows });
    expect(isRange(q(1, 8))).toBe(true);
    expect(isRange(q(1, 0))).toBe(true);
    expect(isRange(q(1, 9))).toBe(false);
    expect(isRange(q(1000, null))).toBe(false);
  });

  it("are the same rows either way: the segment's own, of the ids asked, in its workspace only", async () => {
    const ws = (await createWorkspace(t.db.prisma, "scoped-rows")).workspace.id;
    const other = (await createWorkspace(t.db.prisma, "scoped-rows-other")).workspace.id;
    const segment = async (workspace: string, name: string) =>
      (
        await t.admin.query<{ id: string }>(
          "INSERT INTO segments (workspace_id, id, name, definition) VALUES ($1, gen_random_uuid(), $2, '{}') RETURNING id",
          [workspace, name],
        )
      ).rows[0]!.id;
    const a = await segment(ws, "a");
    const b = await segment(ws, "b");
    const elsewhere = await segment(other, "a");
    const member = (workspace: string, id: string, profiles: string[]) =>
      t.admin.query(
        "INSERT INTO segment_memberships (workspace_id, segment_id, profile_id, entered_at) SELECT $1, $2, p, now() FROM unnest($3::text[]) p",
        [workspace, id, profiles],
      );
    await member(ws, a, ["ann", "bob", "cy"]);
    await member(ws, b, ["bob", "dee"]);
    await member(other, elsewhere, ["ann", "eve"]);

    const ids = ["ann", "dee", "eve", "bob", "nobody"];
    const read = async (range: { ids: number; rows: number } | null) => {
      const q = scopedRows("segment_memberships", "profile_id", ws, a, ids, range);
      const { rows } = await t.db.pool.query<{ profile_id: string }>(q);
      return { range: isRange(q), profiles: rows.map((r) => r.profile_id).sort() };
    };
    expect(await read(null)).toEqual({ range: false, profiles: ["ann", "bob"] });
    expect(await read({ ids: ids.length, rows: 3 })).toEqual({ range: true, profiles: ["ann", "bob"] });
  });
});
