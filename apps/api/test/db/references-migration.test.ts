// The resource_references migration gives existing referrers their holds: running journeys
// (not paused or unstarted ones) hold what their definition names, segments the subscription
// groups they name; only targets that exist are held, and malformed definitions are skipped.
import { randomUUID } from "node:crypto";
import { expect, it } from "vitest";
import { migrateUpTo, useEmptyDatabase } from "./empty-database.ts";

const database = useEmptyDatabase();

it("resource_references backfills the holds of running journeys and of segments", async () => {
  const c = database();
  const migrateIt = await migrateUpTo(c, "resource_references");

  const ws = (await c.query(`INSERT INTO workspaces (id, name) VALUES (gen_random_uuid(), 'w') RETURNING id`)).rows[0].id as string;
  const [entry, split, waited, gone] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
  const [tpl, grpA, grpB] = [randomUUID(), randomUUID(), randomUUID()];
  const segment = (id: string, name: string, definition: unknown = null, group: string | null = null) =>
    c.query(`INSERT INTO segments (workspace_id, id, name, definition, subscription_group_id) VALUES ($1, $2, $3, $4, $5)`, [
      ws,
      id,
      name,
      definition === null ? null : JSON.stringify(definition),
      group,
    ]);
  await c.query(
    `INSERT INTO subscription_groups (workspace_id, id, name, channel, type) VALUES ($1, $2, 'a', 'Email', 'OptIn'), ($1, $3, 'b', 'Email', 'OptOut')`,
    [ws, grpA, grpB],
  );
  await c.query(`INSERT INTO message_templates (workspace_id, id, name, definition) VALUES ($1, $2, 't', '{"type": "Email"}')`, [ws, tpl]);
  await segment(entry, "entry");
  await segment(split, "split");
  await segment(
    waited,
    "waited",
    {
      entryNode: { type: "SubscriptionGroup", id: "s", subscriptionGroupId: grpA },
      nodes: [{ type: "SubscriptionGroup", id: "t", subscriptionGroupId: randomUUID() }],
    },
    grpB,
  );
  await segment(randomUUID(), "linked", { entryNode: { type: "Everyone", id: "e" }, nodes: [] }, grpA);

  const definition = {
    entryNode: { type: "EntryNode", segment: entry, child: "s" },
    nodes: [
      { id: "s", type: "SegmentSplitNode", segment: split, trueChild: "w", falseChild: "g" },
      {
        id: "w",
        type: "WaitForNode",
        segmentChildren: [
          { segmentId: waited, child: "m" },
          { segmentId: entry.toUpperCase(), child: "m" },
        ],
        timeoutSeconds: 5,
        timeoutChild: "m",
      },
      { id: "g", type: "SegmentSplitNode", segment: gone, trueChild: "m", falseChild: "m" },
      { id: "m", type: "MessageNode", channel: "Email", templateId: tpl, subscriptionGroupId: grpA, child: "x" },
      { id: "x", type: "MessageNode", channel: "Email", templateId: "not-a-uuid", child: "ExitNode" },
    ],
    exitNode: { type: "ExitNode" },
  };
  const journey = (name: string, status: string, def: unknown) =>
    c.query(`INSERT INTO journeys (workspace_id, id, name, status, definition) VALUES ($1, gen_random_uuid(), $2, $3, $4) RETURNING id`, [
      ws,
      name,
      status,
      def === null ? null : JSON.stringify(def),
    ]);
  const running = (await journey("running", "Running", definition)).rows[0].id as string;
  await journey("paused", "Paused", definition);
  await journey("not started", "NotStarted", definition);
  await journey("running, no definition", "Running", null);
  await journey("running, malformed", "Running", { entryNode: "nope", nodes: { not: "an array" } });

  await migrateIt();

  const holds = async (table: string) =>
    (
      await c.query(
        `SELECT referrer_kind::text AS kind, referrer_id::text AS referrer, target_id::text AS target FROM ${table} ORDER BY 1, 2, 3`,
      )
    ).rows;
  const segmentIds = Object.fromEntries((await c.query(`SELECT id::text, name FROM segments`)).rows.map((r) => [r.name, r.id]));
  expect(await holds("segment_references")).toEqual(
    [entry, split, waited].sort().map((target) => ({ kind: "Journey", referrer: running, target })),
  );
  expect(await holds("message_template_references")).toEqual([{ kind: "Journey", referrer: running, target: tpl }]);
  expect(await holds("subscription_group_references")).toEqual([
    { kind: "Journey", referrer: running, target: grpA },
    ...[
      { kind: "Segment", referrer: segmentIds.waited, target: grpA },
      { kind: "Segment", referrer: segmentIds.waited, target: grpB },
      { kind: "Segment", referrer: segmentIds.linked, target: grpA },
    ].sort((a, b) => (a.referrer + a.target).localeCompare(b.referrer + b.target)),
  ]);
  // The holds are enforced from now on.
  await expect(c.query(`DELETE FROM segments WHERE id = $1`, [entry])).rejects.toThrow(
    // PostgreSQL 18 names the RESTRICT setting; 15 says "violates foreign key constraint".
    /violates (RESTRICT setting of )?foreign key constraint/,
  );
});
