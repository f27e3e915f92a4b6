// A workspace created after the tables were last analyzed looks empty to the planner: its users
// are estimated at one row. A drain's copy of the events (scope-events.ts) has no statistics
// either, so a segment's result over the copy looked like one row too, and the two were joined by
// a nested loop that read that result once per profile (5.8 s for 2 820 users, in bench (c)
// after (e)). Over the copy, they are joined by hash whatever the estimates. And a segment's rows
// of its users (timers, members) were read through the (workspace, due_at) index, all of the
// workspace's timers for each user (2.7 million buffers for 5 000 users): they are read by primary key.
import { describe, expect, it } from "vitest";
import { SegmentDefinition } from "@tidings/schema";
import { createWorkspace } from "../../src/auth/service.ts";
import { compileSegment, segmentInputs } from "../../src/segments/engine/compile.ts";
import { scopedRows } from "../../src/segments/engine/evaluate.ts";
import { eventsRead, withScopeCopy } from "../../src/segments/engine/scope-events.ts";

import { explain, type Plan, planNodes } from "../support/plans.ts";
import { testDatabase } from "./support.ts";

const t = testDatabase();

const nodeTypes = (plan: Plan) => planNodes(plan).map((n) => n["Node Type"]);
const relations = (plan: Plan) => planNodes(plan).flatMap((n) => n["Relation Name"] ?? []);

describe("a segment evaluated over a drain's copy of the events, in a workspace the statistics do not know", () => {
  it("reads its profiles from the copy too, and joins them by hash, not by a nested loop", async () => {
    const known = (await createWorkspace(t.db.prisma, "analyzed")).workspace.id;
    await t.admin.query("INSERT INTO profiles (workspace_id, profile_id) SELECT $1, 'k-' || i FROM generate_series(1, 5000) i", [known]);
    await t.admin.query("ANALYZE profiles; ANALYZE events");
    const ws = (await createWorkspace(t.db.prisma, "new")).workspace.id;
    const users = Array.from({ length: 3000 }, (_, i) => `u-${i}`);
    await t.admin.query("INSERT INTO profiles (workspace_id, profile_id) SELECT $1, u FROM unnest($2::text[]) u", [ws, users]);
    await t.admin.query(
      `INSERT INTO events (workspace_id, message_id, type, identity_id, user_id, event, event_time, received_at, payload)
       SELECT $1, u || '-' || n, 'track', u, u, 'Bought', now() - n * interval '1 minute', now(),
         jsonb_build_object('properties', jsonb_build_object('amount', n * 20))
       FROM unnest($2::text[]) u CROSS JOIN generate_series(1, 3) n`,
      [ws, users],
    );
    const definition = SegmentDefinition.parse({
      entryNode: {
        type: "LastPerformed",
        id: "root",
        event: "Bought",
        hasProperties: [{ path: "amount", operator: { type: "GreaterThanOrEqual", value: 50 } }],
      },
      nodes: [],
    });
    const client = await t.db.pool.connect();
    try {
      const plan = await withScopeCopy(client, ws, users, [eventsRead(definition)!], async (copy) => {
        const { query } = compileSegment(definition, new Map(), segmentInputs(ws, "s", new Date(), users), { ...copy, exact: true });
        return explain(client, query);
      });
      expect(nodeTypes(plan)).toContain("Hash Join");
      expect(nodeTypes(plan)).not.toContain("Nested Loop");
      // Its profiles are read from the copy as well: each segment of a drain looked them up again.
      expect(relations(plan)).toEqual(expect.arrayContaining(["tidings_scope_events", "tidings_scope_profiles"]));
      expect(relations(plan)).not.toContain("profiles");
    } finally {
      client.release();
    }
  });
});

describe("a segment's rows of its users, in a workspace the statistics do not know", () => {
  it("are read by primary key, one at a time or by range, never through the workspace's timers by due date", async () => {
    const known = (await createWorkspace(t.db.prisma, "timers-analyzed")).workspace.id;
    const segment = async (workspace: string) =>
      (
        await t.admin.query<{ id: string }>(
          "INSERT INTO segments (workspace_id, id, name, definition) VALUES ($1, gen_random_uuid(), gen_random_uuid()::text, '{}') RETURNING id",
          [workspace],
        )
      ).rows[0]!.id;
    const timers = async (workspace: string, id: string, n: number) => {
      await t.admin.query(
        "INSERT INTO profiles (workspace_id, profile_id) SELECT $1, 't-' || i FROM generate_series(1, $2::int) i ON CONFLICT DO NOTHING",
        [workspace, n],
      );
      await t.admin.query(
        `INSERT INTO segment_timers (workspace_id, segment_id, profile_id, due_at)
         SELECT $1, $2, 't-' || i, now() + i * interval '1 second' FROM generate_series(1, $3::int) i`,
        [workspace, id, n],
      );
    };
    await timers(known, await segment(known), 5000);
    await t.admin.query("ANALYZE segment_timers");
    const ws = (await createWorkspace(t.db.prisma, "timers-new")).workspace.id;
    const id = await segment(ws);
    await timers(ws, id, 3000);
    const ids = Array.from({ length: 2000 }, (_, i) => `t-${i}`);
    for (const range of [null, { ids: ids.length, rows: 3000 }]) {
      const plan = await explain(t.db.pool, scopedRows("segment_timers", "profile_id, due_at", ws, id, ids, range));
      const indexes = planNodes(plan).flatMap((n) => (n["Index Name"] ? [n["Index Name"]] : []));
      expect({ range: range !== null, indexes }).toEqual({ range: range !== null, indexes: ["segment_timers_pkey"] });
    }
  });
});
