// A broadcast's deliveries by status, kept as deltas (`broadcast_tallies`): each statement that
// queues a broadcast's deliveries or changes their status adds, in that same statement, one row
// per broadcast for what it changed. Rows are only ever added (a sender never waits on another's
// row lock, and there is no foreign key to lock the broadcast), so a count never disagrees with
// the deliveries and costs the send path one small insert per statement. Reading a running
// broadcast's counts sums its rows (about one per mark): counting its deliveries took 65 ms at
// 100 000 and 0.4 s at a million, once a second for each admin watching (docs/scaling.md).
import type { BroadcastResource } from "@tidings/schema";
import { type PrismaRaw, prismaExecute, type Sql, sql } from "../db/sql.ts";
import type { Tx } from "../db/upsert.ts";

/**
 * The statement adding the tallies of `changed`: a query of (workspace_id, broadcast_id,
 * old_status, new_status) per delivery whose status it changed, statuses as text (queued rows are
 * `tallyQueued`'s). A delivery of no broadcast (a journey's) adds nothing; a change none of the
 * counts sees (Queued to Sending, say) adds no row.
 */
export const addTallies = (changed: Sql) => sql`INSERT INTO broadcast_tallies (workspace_id, broadcast_id, sent, failed, skipped, deferred)
   SELECT * FROM (SELECT workspace_id, broadcast_id,
       count(*) FILTER (WHERE new_status = 'Sent')::int AS sent,
       count(*) FILTER (WHERE new_status = 'Failed')::int AS failed,
       count(*) FILTER (WHERE new_status = 'Skipped')::int AS skipped,
       (count(*) FILTER (WHERE new_status = 'Deferred') - count(*) FILTER (WHERE old_status = 'Deferred'))::int AS deferred
     FROM (${changed}) x WHERE broadcast_id IS NOT NULL GROUP BY workspace_id, broadcast_id) c
   WHERE (c.sent, c.failed, c.skipped, c.deferred) <> (0, 0, 0, 0)`;

/** A broadcast's counts but its audience: pending is everything not sent, failed or skipped (Deferred included). */
export type TalliedCounts = Required<Omit<BroadcastResource["counts"], "audience">>;

/** The counts of each of a workspace's broadcasts in `ids` that has tallies (a completed one has none). */
export async function readTallies(prisma: Pick<Tx, "broadcastTally">, workspaceId: string, ids: string[]) {
  const rows = await prisma.broadcastTally.groupBy({
    by: ["broadcastId"],
    where: { workspaceId, broadcastId: { in: ids } },
    _sum: { total: true, sent: true, failed: true, skipped: true, deferred: true },
  });
  const out = new Map<string, TalliedCounts>();
  for (const { broadcastId, _sum: s } of rows) {
    const [sent, failed, skipped] = [s.sent ?? 0, s.failed ?? 0, s.skipped ?? 0];
    out.set(broadcastId, { sent, failed, skipped, pending: (s.total ?? 0) - sent - failed - skipped, deferred: s.deferred ?? 0 });
  }
  return out;
}

/** Skips a broadcast's unsent deliveries (Queued or Deferred) with `reason`, tallied; returns how many. */
export function skipUnsent(db: PrismaRaw, workspaceId: string, broadcastId: string, reason: string) {
  return prismaExecute(
    db,
    sql`WITH skipped AS (
       UPDATE deliveries d SET status = 'Skipped', reason = ${reason}, updated_at = now()
       FROM (SELECT ctid AS tid, status::text AS old_status FROM deliveries
         WHERE workspace_id = ${workspaceId}::uuid AND broadcast_id = ${broadcastId}::uuid AND status IN ('Queued', 'Deferred')
         FOR UPDATE) o
       WHERE d.ctid = o.tid
       RETURNING d.workspace_id, d.broadcast_id, o.old_status, 'Skipped'::text AS new_status)
     ${addTallies(sql`SELECT * FROM skipped`)}`,
  );
}

/** The statement tallying `queued` deliveries a broadcast's start has just queued. */
export const tallyQueued = (workspaceId: string, broadcastId: string, queued: number) =>
  sql`INSERT INTO broadcast_tallies (workspace_id, broadcast_id, total) VALUES (${workspaceId}::uuid, ${broadcastId}::uuid, ${queued})`;

/** The statement deleting the tallies of the broadcasts `broadcasts` (a query of workspace_id, id) as they complete. */
export const dropTallies = (broadcasts: Sql) =>
  sql`DELETE FROM broadcast_tallies t USING (${broadcasts}) b WHERE t.workspace_id = b.workspace_id AND t.broadcast_id = b.id`;
