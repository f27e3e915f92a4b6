// Journeys as a delivery source: a run's message node queues one delivery (unique per (run, node)),
// sent by the delivery pipeline while the journey is Running; a Paused journey's messages wait.
import type pg from "pg";
import type { SqlQuery } from "../jobs/index.ts";
import type { SendJobs } from "../messaging/send-jobs.ts";
import type { DeliverySource } from "../messaging/sources.ts";
import type { QueuedMessage } from "./runtime/nodes.ts";

export const JOURNEY_SOURCE = "journey";

export function journeyDeliverySource(pool: pg.Pool): DeliverySource {
  return {
    kind: JOURNEY_SOURCE,
    column: "journey_id",
    settings: async (workspaceId, id) => {
      const { rows } = await pool.query("SELECT 1 FROM journeys WHERE workspace_id = $1 AND id = $2 AND status = 'Running'", [
        workspaceId,
        id,
      ]);
      return rows.length > 0 ? { rateLimitPerSecond: null } : null;
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
 * The statements that queue run messages (one delivery per (run, node); a second queue of the
 * same pair is a no-op) and wake the journey's senders, for the transaction that moves the runs
 * past their message nodes.
 */
export function queueJourneyMessages(sends: SendJobs, workspaceId: string, journeyId: string, messages: QueuedMessage[]): SqlQuery[] {
  return [
    {
      text: `INSERT INTO deliveries (workspace_id, id, user_id, channel, template_id, journey_id, run_id, node_id, subscription_group_id, context, status)
             SELECT $1, gen_random_uuid(), u.user_id, u.channel::"Channel", u.template_id, $2, u.run_id, u.node_id, u.group_id, u.context, 'Queued'
             FROM unnest($3::text[], $4::text[], $5::uuid[], $6::uuid[], $7::text[], $8::uuid[], $9::jsonb[])
               AS u(user_id, channel, template_id, run_id, node_id, group_id, context)
             ON CONFLICT DO NOTHING`,
      values: [
        workspaceId,
        journeyId,
        messages.map((m) => m.run.userId),
        messages.map((m) => m.node.channel),
        messages.map((m) => m.node.templateId),
        messages.map((m) => m.run.id),
        messages.map((m) => m.node.id),
        messages.map((m) => m.node.subscriptionGroupId ?? null),
        messages.map((m) => (m.run.event ? JSON.stringify({ event: m.run.event }) : null)),
      ],
    },
    ...sends.wakeQueries(JOURNEY_SOURCE, workspaceId, journeyId, false),
  ];
}
