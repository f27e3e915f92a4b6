// The broadcast_tallies migration starts every broadcast not completed (running, queued or
// cancelled) from its deliveries as they stand; a completed one keeps its final counts and gets
// no tallies. Two workspaces with the same broadcast name and user ids stay apart.
import { expect, it } from "vitest";
import { migrateUpTo, useEmptyDatabase } from "./empty-database.ts";

const database = useEmptyDatabase();

/** A broadcast in a new workspace with deliveries in `statuses` (users u0, u1, …). */
async function broadcast(status: string, statuses: string[], finalCounts: unknown = null) {
  const c = database();
  const ws = (await c.query(`INSERT INTO workspaces (id, name) VALUES (gen_random_uuid(), gen_random_uuid()::text) RETURNING id`)).rows[0]
    .id as string;
  const id = (
    await c.query(
      `INSERT INTO broadcasts (workspace_id, id, name, status, request, channel, final_counts)
       VALUES ($1, gen_random_uuid(), 'b', $2, '{}', 'Webhook', $3) RETURNING id`,
      [ws, status, finalCounts === null ? null : JSON.stringify(finalCounts)],
    )
  ).rows[0].id as string;
  await c.query(
    `INSERT INTO deliveries (workspace_id, id, user_id, channel, broadcast_id, status, due_at)
     SELECT $1, gen_random_uuid(), 'u' || n, 'Webhook', $2, s::"DeliveryStatus", now() FROM unnest($3::text[]) WITH ORDINALITY AS x(s, n)`,
    [ws, id, statuses],
  );
  return { ws, id };
}

it("broadcast_tallies starts each broadcast not completed from its deliveries", async () => {
  const c = database();
  const migrateIt = await migrateUpTo(c, "broadcast_tallies");

  const running = await broadcast("Running", ["Queued", "Sending", "Sent", "Sent", "Failed", "Skipped", "Deferred", "Deferred"]);
  const cancelled = await broadcast("Cancelled", ["Sent", "Skipped", "Skipped"]);
  const completed = await broadcast("Completed", ["Sent", "Failed"], { sent: 1, failed: 1, skipped: 0 });

  await migrateIt();
  const { rows } = await c.query(
    `SELECT workspace_id AS ws, broadcast_id AS id, total, sent, failed, skipped, deferred FROM broadcast_tallies ORDER BY total DESC`,
  );
  expect(rows).toEqual([
    { ...running, total: 8, sent: 2, failed: 1, skipped: 1, deferred: 2 },
    { ...cancelled, total: 3, sent: 1, failed: 0, skipped: 2, deferred: 0 },
  ]);
  expect(rows.some((r) => r.id === completed.id)).toBe(false);
});
