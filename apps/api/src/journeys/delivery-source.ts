// Journeys as a delivery source: a run's message node queues one delivery (unique per (run, node)),
// sent by the delivery pipeline while the journey is Running; a Paused journey's messages wait.
import type pg from "pg";
import { type Sql, sql } from "../db/sql.ts";
import type { SendJobs } from "../messaging/index.ts";
import type { DeliverySource } from "../messaging/index.ts";
import type { QueuedMessage } from "./runtime/nodes.ts";

export const JOURNEY_SOURCE = "journey";

export function journeyDeliverySource(pool: pg.Pool): DeliverySource {
  return {
    kind: JOURNEY_SOURCE,
    column: "journey_id",
    settings: async (workspaceId, id) => {
      const { rows } = await pool.query(
        sql`SELECT 1 FROM journeys WHERE workspace_id = ${workspaceId} AND id = ${id} AND status = 'Running'`,
      );
      return rows.length > 0 ? { rateLimitPerSecond: null, decided: (ids) => wakeRunsOf(pool, workspaceId, ids) } : null;
    },
    activeStreams: async () => {
      const { rows } = await pool.query<{ workspace_id: string; id: string }>(
        "SELECT workspace_id, id FROM journeys WHERE status = 'Running'",
      );
      return rows.map((r) => ({ workspaceId: r.workspace_id, id: r.id }));
    },
  };
}

/**
 * Makes the runs waiting at the message nodes of these deliveries due, for those now decided
 * (Sent, Failed, Skipped): the runtime moves them on (its tick finds due runs every second).
 */
async function wakeRunsOf(pool: pg.Pool, workspaceId: string, ids: string[]) {
  await pool.query(
    sql`UPDATE journey_runs r SET due_at = now()
     FROM deliveries d
     WHERE d.workspace_id = ${workspaceId} AND d.id = ANY(${ids}::uuid[]) AND d.status IN ('Sent', 'Failed', 'Skipped')
       AND r.workspace_id = ${workspaceId} AND r.id = d.run_id AND r.node_id = d.node_id AND r.status = 'Active' AND r.waiting`,
  );
}

/**
 * The statement that queues run messages (one delivery per (run, node); a second queue of the
 * same pair is a no-op), for the transaction that moves the runs past their message nodes; once it
 * commits, `wakeJourneySenders`.
 */
export function queueJourneyMessages(sends: SendJobs, workspaceId: string, journeyId: string, messages: QueuedMessage[]): Sql {
  // The node's category, else its template's.
  const rows = sql`SELECT u.user_id, u.channel, u.template_id, u.run_id, u.node_id, u.subscription_group_id, u.context,
          coalesce(u.category, t.category) AS category, u.hold_action, NULL::timestamptz AS due_at
        FROM unnest(
          ${messages.map((m) => m.run.userId)}::text[],
          ${messages.map((m) => m.node.channel)}::text[],
          ${messages.map((m) => m.node.templateId)}::uuid[],
          ${messages.map((m) => m.run.id)}::uuid[],
          ${messages.map((m) => m.node.id)}::text[],
          ${messages.map((m) => m.node.subscriptionGroupId ?? null)}::uuid[],
          ${messages.map((m) => (m.run.event ? JSON.stringify({ event: m.run.event }) : null))}::jsonb[],
          ${messages.map((m) => m.node.category ?? null)}::text[],
          ${messages.map((m) => (m.node.whenHeld === "skip" ? "skip" : null))}::text[])
          AS u(user_id, channel, template_id, run_id, node_id, subscription_group_id, context, category, hold_action)
        LEFT JOIN message_templates t ON t.workspace_id = ${workspaceId}::uuid AND t.id = u.template_id`;
  return sends.queueStatement(JOURNEY_SOURCE, workspaceId, journeyId, rows);
}

/**
 * After the commit of messages queued by `queueJourneyMessages`: the journey's senders, those
 * not running (a batch of a busy journey commits while they send the last one's messages).
 */
export const wakeJourneySenders = (sends: SendJobs, workspaceId: string, journeyId: string) =>
  sends.wakeIdle(JOURNEY_SOURCE, workspaceId, journeyId, false);
