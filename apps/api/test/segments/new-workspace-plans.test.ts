// A workspace created after the tables were last analyzed looks empty to the planner: its users
// are estimated at one row. A drain's copy of the events (scope-events.ts) has no statistics
// either, so a segment's result over the copy looked like one row too, and the two were joined by
// a nested loop that read that result once per profile (5.8 s for 2 820 users, in bench (c)
// after (e)). Over the copy, they are joined by hash whatever the estimates.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SegmentDefinition } from "@tidings/schema";
import { createWorkspace } from "../../src/auth/service.ts";
import { createDb, type Db } from "../../src/db/client.ts";
import { compileSegment, segmentInputs } from "../../src/segments/engine/compile.ts";
import { eventsRead, withScopeEvents } from "../../src/segments/engine/scope-events.ts";
import { createTestDatabase } from "../support/app.ts";

let db: Db;
let admin: pg.Client;
beforeAll(async () => {
  const url = await createTestDatabase();
  db = createDb(url, 2);
  admin = new pg.Client({ connectionString: url });
  await admin.connect();
});
afterAll(async () => {
  await admin?.end();
  await db?.close();
});

/** The node types of a plan (EXPLAIN's JSON), all levels. */
function nodeTypes(plan: { "Node Type": string; Plans?: unknown[] }): string[] {
  return [plan["Node Type"], ...(plan.Plans ?? []).flatMap((p) => nodeTypes(p as typeof plan))];
}

describe("a segment evaluated over a drain's copy of the events, in a workspace the statistics do not know", () => {
  it("is joined to its profiles by hash, not by a nested loop", async () => {
    const known = (await createWorkspace(db.prisma, "analyzed")).workspace.id;
    await admin.query("INSERT INTO profiles (workspace_id, profile_id) SELECT $1, 'k-' || i FROM generate_series(1, 5000) i", [known]);
    await admin.query("ANALYZE profiles; ANALYZE events");
    const ws = (await createWorkspace(db.prisma, "new")).workspace.id;
    const users = Array.from({ length: 3000 }, (_, i) => `u-${i}`);
    await admin.query("INSERT INTO profiles (workspace_id, profile_id) SELECT $1, u FROM unnest($2::text[]) u", [ws, users]);
    await admin.query(
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
    const client = await db.pool.connect();
    try {
      const types = await withScopeEvents(client, ws, users, [eventsRead(definition)!], async (table) => {
        const { query } = compileSegment(definition, new Map(), segmentInputs(ws, "s", new Date(), users), { table, exact: true });
        const { rows } = await client.query({ text: `EXPLAIN (FORMAT JSON) ${query.text}`, values: query.values });
        return nodeTypes(rows[0]["QUERY PLAN"][0].Plan);
      });
      expect(types).toContain("Hash Join");
      expect(types).not.toContain("Nested Loop");
    } finally {
      client.release();
    }
  });
});
