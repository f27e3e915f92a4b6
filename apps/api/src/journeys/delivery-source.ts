// Journeys as a delivery source: a run's message node queues one delivery (unique per (run, node)),
// sent by the delivery pipeline while the journey is Running; a Paused journey's messages wait.
import type { Channel } from "@tidings/schema";
import type pg from "pg";
import type { SqlQuery } from "../jobs/index.ts";
import type { SendJobs } from "../messaging/send-jobs.ts";
import type { DeliverySource } from "../messaging/sources.ts";

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

export interface JourneyMessage {
  workspaceId: string;
  journeyId: string;
  runId: string;
  nodeId: string;
  userId: string;
  channel: Channel;
  templateId: string;
  subscriptionGroupId: string | null;
  /** The run's triggering event, in the message's Liquid scope as `event`. */
  event?: Record<string, unknown>;
}

/**
 * The statements that queue a run's message and wake the journey's senders, for the transaction
 * that moves the run past its message node. A second queue of the same (run, node) is a no-op.
 */
export function queueJourneyMessage(sends: SendJobs, m: JourneyMessage): SqlQuery[] {
  return [
    {
      text: `INSERT INTO deliveries (workspace_id, id, user_id, channel, template_id, journey_id, run_id, node_id, subscription_group_id, context, status)
             VALUES ($1, gen_random_uuid(), $2, $3::"Channel", $4::uuid, $5::uuid, $6::uuid, $7, $8::uuid, $9::jsonb, 'Queued')
             ON CONFLICT DO NOTHING`,
      values: [
        m.workspaceId,
        m.userId,
        m.channel,
        m.templateId,
        m.journeyId,
        m.runId,
        m.nodeId,
        m.subscriptionGroupId,
        m.event ? JSON.stringify({ event: m.event }) : null,
      ],
    },
    ...sends.wakeQueries(JOURNEY_SOURCE, m.workspaceId, m.journeyId, false),
  ];
}
