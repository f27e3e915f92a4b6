// Changes made outside ingestion reach the segment engine the way ingestion's do: an outbox row
// written in the transaction that makes the change (docs/segments.md), and a notification
// delivered when it commits.
import type { Tx } from "../../db/upsert.ts";
import { SEGMENT_CHANGES_CHANNEL } from "../../ingest/sql.ts";

/**
 * Records that `ids` (user ids or linked ids) changed in the ways `keys` name: `sg:<group id>`
 * for subscription assignments, `manual` for hand-set members, `*` for anything else (a deleted
 * user). Call it inside the transaction of the change.
 */
export async function recordSegmentChange(tx: Pick<Tx, "$executeRaw">, workspaceId: string, ids: string[], keys: string[]) {
  if (ids.length === 0) return;
  await tx.$executeRaw`INSERT INTO segment_outbox (workspace_id, ids, keys) VALUES (${workspaceId}::uuid, ${ids}::text[], ${keys}::text[])`;
  await tx.$executeRaw`SELECT pg_notify(${SEGMENT_CHANGES_CHANNEL}, ${workspaceId})`;
}
