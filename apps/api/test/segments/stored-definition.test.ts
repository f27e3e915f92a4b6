// A definition read back from the database is parsed with the schema before any of it reaches
// SQL text: one altered behind the API's back is an error naming the segment and the field, never
// SQL built from whatever the row holds. The engine leaves that segment out and says so, the
// workspace's other segments stay current, it is marked failing and retried with back-off, and
// the tick does not wake the workspace for it before its retry is due.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { membersNow } from "../../src/segments/engine/evaluate.ts";
import { SegmentEngine } from "../../src/segments/engine/index.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { identify, segmentWorld, single, TestClock, track } from "./support.ts";

let t: TestApp;
const clock = new TestClock();

beforeAll(async () => {
  // No worker of the app's own: the engine below is the only one that evaluates, so what it logs is all that is said.
  t = await createTestApp({ clock: clock.read, role: "api" });
});
afterAll(() => t?.close());

describe("stored segment definitions", () => {
  it("a definition that does not parse is an error naming the segment and the field; the engine skips that segment, once said, and keeps the others current", async () => {
    const w = await segmentWorld(t);
    await w.send([identify("a", {}, clock.now - 1000), identify("b", {}, clock.now - 1000)]);
    const id = await w.segment(single({ type: "Performed", event: "Bought", times: 1, timesOperator: ">=" } as never));
    const pro = await w.segment(single({ type: "Trait", path: "plan", operator: { type: "Equals", value: "pro" } } as never));
    await w.settle();
    expect(await w.members(id)).toEqual([]);

    // Comparison text that, spliced into the query, would make everyone a member.
    const { pool } = t.ctx.db;
    await pool.query(
      `UPDATE segments SET definition = jsonb_set(definition, '{entryNode,timesOperator}', '"<> 0 OR true OR 0 ="'),
         definition_updated_at = now() WHERE id = $1`,
      [id],
    );
    const message = new RegExp(`segment ${id}: the stored definition is not a valid segment definition \\(entryNode.timesOperator: `);
    await expect(membersNow(pool, w.ws.id, id, ["a", "b"], new Date(clock.now))).rejects.toThrow(message);

    // An engine of its own, whose log is read.
    const logged: string[] = [];
    const engine = new SegmentEngine({
      pool,
      jobs: t.ctx.jobs,
      clock: clock.read,
      log: (msg, err) => logged.push(`${msg}: ${(err as Error).message}`),
    });
    await w.send([identify("b", { plan: "pro" }, clock.now), track({ userId: "a" }, "Bought", clock.now)]);
    await engine.settle(w.ws.id);
    await engine.settle(w.ws.id);
    expect(await w.members(pro)).toEqual(["b"]);
    expect(await w.members(id)).toEqual([]);
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatch(message);
    // Marked failing with the reason, and tried again only after its back-off: no work for the
    // tick to wake the workspace for until then.
    const { rows } = await pool.query("SELECT evaluation_error, evaluation_retry_at FROM segments WHERE id = $1", [id]);
    expect(rows[0].evaluation_error).toMatch(message);
    expect(rows[0].evaluation_retry_at.getTime()).toBe(clock.now + 5000);
    expect(await engine.workspacesWithWork()).not.toContain(w.ws.id);
    clock.advance(5000);
    expect(await engine.workspacesWithWork()).toContain(w.ws.id);
    await engine.settle(w.ws.id);
    expect(logged).toHaveLength(2);
    const again = await pool.query("SELECT evaluation_failures, evaluation_retry_at FROM segments WHERE id = $1", [id]);
    expect(again.rows[0]).toEqual({ evaluation_failures: 2, evaluation_retry_at: new Date(clock.now + 10_000) });

    // Saved again through the API, it is recomputed and current.
    await w.admin("PUT", "/api/admin/segments", {
      id,
      name: "bought",
      definition: single({ type: "Performed", event: "Bought", times: 1, timesOperator: ">=" } as never),
    });
    await engine.settle(w.ws.id);
    expect(await w.members(id)).toEqual(["a"]);
    const saved = await w.admin("GET", `/api/admin/segments/${id}`);
    expect(saved.failing).toBeUndefined();
  });
});
