// A definition read back from the database is parsed with the schema before any of it reaches
// SQL text: one altered behind the API's back is an error naming the segment and the field, never
// SQL built from whatever the row holds.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { membersNow } from "../../src/segments/engine/evaluate.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { identify, segmentWorld, single, TestClock } from "./support.ts";

let t: TestApp;
const clock = new TestClock();

beforeAll(async () => {
  t = await createTestApp({ clock: clock.read });
});
afterAll(() => t?.close());

describe("stored segment definitions", () => {
  it("a definition that does not parse is an error naming the segment and the field, for the engine and for membersNow", async () => {
    const w = await segmentWorld(t);
    await w.send([identify("a", {}, clock.now - 1000), identify("b", {}, clock.now - 1000)]);
    const id = await w.segment(single({ type: "Performed", event: "Bought", times: 1, timesOperator: ">=" } as never));
    await w.settle();
    expect(await w.members(id)).toEqual([]);

    // Comparison text that, spliced into the query, would make everyone a member.
    const { pool } = t.ctx.db;
    await pool.query(
      `UPDATE segments SET definition = jsonb_set(definition, '{entryNode,timesOperator}', '"<> 0 OR true OR 0 ="'),
         definition_updated_at = now() WHERE id = $1`,
      [id],
    );
    try {
      const message = new RegExp(`segment ${id}: the stored definition is not a valid segment definition \\(entryNode.timesOperator: `);
      await expect(w.settle()).rejects.toThrow(message);
      await expect(membersNow(pool, w.ws.id, id, ["a", "b"], new Date(clock.now))).rejects.toThrow(message);
      expect(await w.members(id)).toEqual([]);
    } finally {
      // The workspace's background refreshes would fail on it until it is gone.
      await pool.query("DELETE FROM segments WHERE id = $1", [id]);
    }
  });
});
