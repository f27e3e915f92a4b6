// Broadcasts on the job layer. `broadcasts.start` freezes the audience (one Queued delivery per
// member, unique per (broadcast, user)) and wakes the broadcast's senders; the sending itself is
// the delivery pipeline's (messaging/senders.ts), for which a broadcast is one kind of source.
// A job every second starts broadcasts whose start job was lost.
import type { MessageTemplateDefinition } from "@tidings/schema";
import type pg from "pg";
import { empty, limit, param, raw, type Sql, sql } from "../db/sql.ts";
import { inTransaction } from "../db/transaction.ts";
import type { JobLayer } from "../jobs/index.ts";
import { dropTallies, type SendJobs, tallyQueued } from "../messaging/index.ts";
import type { DeliverySource, StreamSettings } from "../messaging/index.ts";
import { parseStoredDefinition } from "../segments/index.ts";
import type { SegmentEngine } from "../segments/index.ts";
import type { PrismaClient } from "../db/client.ts";
import { policiesFor } from "../policies/index.ts";
import { localSendTime } from "./local-time.ts";
import { broadcastStartKey, releaseBroadcast, START_TASK } from "./service.ts";

const TICK_TASK = "broadcasts.tick";
const KIND = "broadcast";
/** Members written and sent before the rest of the audience is (the first messages go out at once). */
const FIRST_SLICE = 1000;

export interface BroadcastRunnerOptions {
  pool: pg.Pool;
  prisma: PrismaClient;
  jobs: JobLayer;
  segments: SegmentEngine;
  sends: SendJobs;
}

/** A broadcast as the runner reads it (`COLUMNS`). */
interface BroadcastRow {
  status: string;
  request: { segmentDefinition?: unknown; subscriptionGroupId?: string; sendAtLocalTime?: string; ifLocalTimePassed?: "tomorrow" | "now" };
  template: MessageTemplateDefinition;
  channel: string;
  segment_id: string | null;
  template_id: string | null;
  subscription_group_id: string | null;
  rate_limit_per_second: number | null;
  category: string | null;
}
/** Exactly the row's keys (a column missing or extra does not compile). */
const COLUMNS = raw(
  Object.keys({
    status: true,
    request: true,
    template: true,
    channel: true,
    segment_id: true,
    template_id: true,
    subscription_group_id: true,
    rate_limit_per_second: true,
    category: true,
  } satisfies Record<keyof BroadcastRow, true>).join(", "),
);

export class BroadcastRunner {
  constructor(private o: BroadcastRunnerOptions) {}

  register() {
    const { jobs } = this.o;
    jobs.register(START_TASK, (p: { workspaceId: string; broadcastId: string }) => this.start(p.workspaceId, p.broadcastId));
    jobs.register(TICK_TASK, () => this.tick());
    jobs.recurring(TICK_TASK, 1);
    this.o.sends.addSource(this.source());
  }

  private async load(workspaceId: string, id: string): Promise<BroadcastRow | null> {
    const { rows } = await this.o.pool.query<BroadcastRow>(
      sql`SELECT ${COLUMNS} FROM broadcasts WHERE workspace_id = ${workspaceId} AND id = ${id}`,
    );
    return rows[0] ?? null;
  }

  /** A broadcast as a delivery source: its members' deliveries, one template, an optional rate. */
  private source(): DeliverySource {
    return {
      kind: KIND,
      column: "broadcast_id",
      settings: async (workspaceId, id): Promise<StreamSettings | null> => {
        const b = await this.load(workspaceId, id);
        // A Queued broadcast is still writing its audience; the first slice can go out.
        if (b?.status !== "Running" && b?.status !== "Queued") return null;
        return { template: b.template, rateLimitPerSecond: b.rate_limit_per_second };
      },
      activeStreams: async () => {
        const { rows } = await this.o.pool.query<{ workspace_id: string; id: string }>(
          "SELECT workspace_id, id FROM broadcasts WHERE status = 'Running'",
        );
        return rows.map((r) => ({ workspaceId: r.workspace_id, id: r.id }));
      },
      drained: (workspaceId, id) => this.complete(workspaceId, id),
    };
  }

  /**
   * Completes a running broadcast none of whose deliveries is pending, keeping its counts by status
   * (read in the same snapshot as the check that none is pending; they no longer change) instead of
   * its tallies.
   */
  private async complete(workspaceId: string, broadcastId: string) {
    const [ws, id] = [param(workspaceId), param(broadcastId)];
    const done = await this.o.pool.query(
      sql`WITH done AS (UPDATE broadcasts SET status = 'Completed', completed_at = now(), updated_at = now(),
         final_counts = (SELECT jsonb_build_object(
             'sent', count(*) FILTER (WHERE status = 'Sent'),
             'failed', count(*) FILTER (WHERE status = 'Failed'),
             'skipped', count(*) FILTER (WHERE status = 'Skipped'))
           FROM deliveries WHERE workspace_id = ${ws} AND broadcast_id = ${id})
       WHERE workspace_id = ${ws} AND id = ${id} AND status = 'Running'
         AND NOT EXISTS (SELECT 1 FROM deliveries WHERE workspace_id = ${ws} AND broadcast_id = ${id} AND status IN ('Queued', 'Sending', 'Deferred'))
       RETURNING workspace_id, id),
     dropped AS (${dropTallies(sql`SELECT * FROM done`)})
     SELECT id FROM done`,
    );
    if (done.rowCount) await releaseBroadcast(this.o.prisma, workspaceId, broadcastId);
  }

  /**
   * Freezes the audience: one Queued delivery per member. A first slice is written and sent at
   * once; then the whole audience (ON CONFLICT DO NOTHING: the slice is already there) in the
   * transaction that makes the broadcast Running. Until then it stays Queued, so a start cut off
   * in between is run again by the tick and completes the audience.
   */
  async start(workspaceId: string, broadcastId: string) {
    const b = await this.load(workspaceId, broadcastId);
    if (b?.status !== "Queued") return;
    // A stored segment's members as of now: changes still in the outbox, and a first recompute
    // of a segment created a moment ago, are applied first.
    if (b.segment_id) await this.o.segments.settle(workspaceId);
    const audience = b.segment_id
      ? sql`SELECT profile_id FROM segment_memberships WHERE workspace_id = ${workspaceId} AND segment_id = ${b.segment_id}::uuid`
      : await this.o.segments.membersOf(
          workspaceId,
          parseStoredDefinition(b.request.segmentDefinition, `broadcast ${broadcastId}`),
          broadcastId,
        );
    const local = b.request.sendAtLocalTime
      ? localSendTime(
          workspaceId,
          b.request.sendAtLocalTime,
          b.request.ifLocalTimePassed ?? "tomorrow",
          (await policiesFor(this.o.pool, workspaceId)).defaultTimezone,
        )
      : undefined;
    const freeze = async (slice: Sql, started: boolean) => {
      const client = await this.o.pool.connect();
      try {
        return await inTransaction(client, async () => {
          const locked = await client.query(
            sql`SELECT 1 FROM broadcasts WHERE workspace_id = ${workspaceId} AND id = ${broadcastId} AND status = 'Queued' FOR UPDATE`,
          );
          if (locked.rowCount === 0) return false;
          const members = sql`SELECT m.profile_id AS user_id, ${b.channel}::text AS channel, ${b.template_id}::uuid AS template_id,
              ${b.subscription_group_id}::uuid AS subscription_group_id, NULL::jsonb AS context, NULL::uuid AS run_id, NULL::text AS node_id,
              ${b.category}::text AS category, NULL::text AS hold_action, ${local?.due ?? sql`NULL::timestamptz`} AS due_at
            FROM (${audience} ${slice}) m ${local?.join ?? sql``}`;
          const queued = await client.query(this.o.sends.queueStatement(KIND, workspaceId, broadcastId, members));
          if (queued.rowCount) await client.query(tallyQueued(workspaceId, broadcastId, queued.rowCount));
          const [ws, id] = [param(workspaceId), param(broadcastId)];
          await client.query(
            started
              ? sql`UPDATE broadcasts SET status = 'Running', updated_at = now(),
                   audience = (SELECT count(*) FROM deliveries WHERE workspace_id = ${ws} AND broadcast_id = ${id})
                 WHERE workspace_id = ${ws} AND id = ${id}`
              : sql`UPDATE broadcasts SET started_at = coalesce(started_at, now()), updated_at = now() WHERE workspace_id = ${ws} AND id = ${id}`,
          );
          for (const q of this.o.sends.wakeQueries(KIND, workspaceId, broadcastId, b.rate_limit_per_second !== null)) await client.query(q);
          return true;
        });
      } finally {
        client.release();
      }
    };
    if (await freeze(limit(FIRST_SLICE), false)) await freeze(empty, true);
  }

  /** Starts broadcasts whose start job was lost (or cut off before the whole audience was written). */
  async tick() {
    const { rows } = await this.o.pool.query<{ workspace_id: string; id: string }>(
      "SELECT workspace_id, id FROM broadcasts WHERE status = 'Queued' AND created_at < now() - interval '5 seconds'",
    );
    for (const r of rows)
      await this.o.jobs.add(
        START_TASK,
        { workspaceId: r.workspace_id, broadcastId: r.id },
        { key: broadcastStartKey(r.workspace_id, r.id) },
      );
  }
}
