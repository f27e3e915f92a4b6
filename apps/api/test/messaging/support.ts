// Shared by the messaging tests that drive the send path's statements directly.
import type pg from "pg";

/**
 * `n` profiles (u-1 … u-n, no traits) and one Queued webhook delivery each for `broadcast`, due a
 * minute ago: what a broadcast's start queues.
 */
export async function queueBroadcastRows(admin: Pick<pg.Client, "query">, workspaceId: string, broadcast: string, n: number) {
  await admin.query(
    `INSERT INTO profiles (workspace_id, profile_id, traits) SELECT $1, 'u-' || i, '{}'::jsonb FROM generate_series(1, $2) i`,
    [workspaceId, n],
  );
  await admin.query(
    `INSERT INTO deliveries (workspace_id, id, user_id, channel, broadcast_id, status, due_at)
     SELECT $1, gen_random_uuid(), 'u-' || i, 'Webhook', $2, 'Queued', now() - interval '1 minute' FROM generate_series(1, $3) i`,
    [workspaceId, broadcast, n],
  );
}
