// A segment without windows keeps no timers (src/segments/engine/evaluate.ts): its scoped
// evaluations do not look its users' timers up, which a drain would otherwise pay once per user
// and segment. Which definitions have windows is the compiler's answer (compileSegment's `timed`).
import type pg from "pg";
import { describe, expect, it } from "vitest";
import { SegmentDefinition } from "@tidings/schema";
import { createWorkspace } from "../../src/auth/service.ts";
import { compileSegment, segmentInputs } from "../../src/segments/engine/compile.ts";
import { evaluateSegment } from "../../src/segments/engine/evaluate.ts";
/** A one-node definition, parsed with the schema (its defaults filled in, as the engine reads it). */
const single = (node: Record<string, unknown>) => SegmentDefinition.parse({ entryNode: { ...node, id: "root" }, nodes: [] });

import { testDatabase } from "./support.ts";

const t = testDatabase();

const amount10 = [{ path: "amount", operator: { type: "GreaterThanOrEqual", value: 10 } }];
const untimed: Record<string, SegmentDefinition> = {
  "a trait equal to a value": single({ type: "Trait", path: "plan", operator: { type: "Equals", value: "pro" } }),
  "an event performed at least once": single({ type: "Performed", event: "Bought", times: 1 }),
  "an event performed exactly once, with properties": single({
    type: "Performed",
    event: "Bought",
    times: 1,
    timesOperator: "=",
    properties: amount10,
  }),
  "an event performed fewer than twice": single({ type: "Performed", event: "Bought", times: 2, timesOperator: "<" }),
  "the last event's properties": single({ type: "LastPerformed", event: "Bought", hasProperties: amount10 }),
  everyone: single({ type: "Everyone" }),
};
const timed: Record<string, SegmentDefinition> = {
  "an event performed within a window": single({ type: "Performed", event: "Bought", times: 1, withinSeconds: 3600 }),
  "a date trait within a window": single({ type: "Trait", path: "lastSeen", operator: { type: "Within", windowSeconds: 60 } }),
};

const isTimed = (definition: SegmentDefinition) =>
  compileSegment(definition, new Map(), segmentInputs("00000000-0000-0000-0000-000000000000", "s", new Date(), ["ann"])).timed;

describe("a segment's timers", () => {
  it("exist only for definitions with a window", () => {
    for (const [name, definition] of Object.entries(untimed)) expect({ name, timed: isTimed(definition) }).toEqual({ name, timed: false });
    for (const [name, definition] of Object.entries(timed)) expect({ name, timed: isTimed(definition) }).toEqual({ name, timed: true });
  });

  it("are left alone by a scoped evaluation of a definition without one, and read by one with a window", async () => {
    const ws = (await createWorkspace(t.db.prisma, "untimed")).workspace.id;
    await t.admin.query("INSERT INTO profiles (workspace_id, profile_id) SELECT $1, p FROM unnest($2::text[]) p", [
      ws,
      ["ann", "bob", "cy"],
    ]);
    // Scans of segment_timers by this transaction's statements so far.
    const timerScans = async (client: pg.PoolClient) =>
      (
        await client.query<{ n: number }>(
          "SELECT (coalesce(seq_scan, 0) + coalesce(idx_scan, 0))::int AS n FROM pg_stat_xact_user_tables WHERE relname = 'segment_timers'",
        )
      ).rows[0]?.n ?? 0;
    const scansOf = async (name: string, definition: SegmentDefinition) => {
      const { rows } = await t.admin.query<{ id: string }>(
        "INSERT INTO segments (workspace_id, id, name, definition) VALUES ($1, gen_random_uuid(), $2, $3) RETURNING id",
        [ws, name, definition],
      );
      const client = await t.db.pool.connect();
      try {
        await client.query("BEGIN");
        const before = await timerScans(client);
        await evaluateSegment(client, { workspaceId: ws, id: rows[0]!.id, definition }, new Map(), new Date(), ["ann", "bob", "cy"]);
        const scans = (await timerScans(client)) - before;
        await client.query("ROLLBACK");
        return scans;
      } finally {
        client.release();
      }
    };
    for (const [name, definition] of Object.entries(untimed))
      expect({ name, scans: await scansOf(name, definition) }).toEqual({ name, scans: 0 });
    for (const [name, definition] of Object.entries(timed)) expect(await scansOf(name, definition)).toBeGreaterThan(0);
  });
});
