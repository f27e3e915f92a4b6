// Broadcasts on the job layer. `broadcasts.start` freezes the audience (one Queued delivery per
// member, unique per (broadcast, user)) and starts the senders; each `broadcasts.send` job claims
// chunks of due deliveries (SKIP LOCKED, so workers share them and never both take one) until none
// is left, then completes the broadcast. A job every second restarts the senders of a broadcast
// that stopped making progress (its worker died) and starts broadcasts whose start job was lost.
import type { MessageTemplateDefinition, SegmentDefinition } from "@tidings/schema";
import type pg from "pg";
import { inTransaction } from "../db/transaction.ts";
import type { JobLayer } from "../jobs/index.ts";
import type { Deliverer } from "../messaging/deliver.ts";
import type { SegmentEngine } from "../segments/engine/index.ts";
import type { PrismaClient } from "../db/client.ts";
import { releaseBroadcast, START_TASK } from "./service.ts";

const SEND_TASK = "broadcasts.send";
const TICK_TASK = "broadcasts.tick";
/** Senders per broadcast (parallel jobs claiming chunks). */
const SENDERS = 4;
/** Deliveries claimed at once. */
const CHUNK = 1000;
/** Members written and sent before the rest of the audience is (the first messages go out at once). */
const FIRST_SLICE = CHUNK;

export interface BroadcastRunnerOptions {
  pool: pg.Pool;
  prisma: PrismaClient;
  jobs: JobLayer;
  segments: SegmentEngine;
  deliverer: Deliverer;
}

interface BroadcastRow {
  workspace_id: string;
  id: string;
  status: string;
  request: { segmentDefinition?: SegmentDefinition; subscriptionGroupId?: string };
  template: MessageTemplateDefinition;
  channel: string;
  segment_id: string | null;
  template_id: string | null;
  subscription_group_id: string | null;
  rate_limit_per_second: number | null;
}

export class BroadcastRunner {
  constructor(private o: BroadcastRunnerOptions) {}

  register() {
    const { jobs } = this.o;
    jobs.register(START_TASK, (p: { workspaceId: string; broadcastId: string }) => this.start(p.workspaceId, p.broadcastId));
    jobs.register(SEND_TASK, (p: { workspaceId: string; broadcastId: string }) => this.send(p.workspaceId, p.broadcastId));
    jobs.register(TICK_TASK, () => this.tick());
    jobs.recurring(TICK_TASK, 1);
  }

  private async load(workspaceId: string, id: string): Promise<BroadcastRow | null> {
    const { rows } = await this.o.pool.query<BroadcastRow>("SELECT * FROM broadcasts WHERE workspace_id = $1 AND id = $2", [
      workspaceId,
      id,
    ]);
    return rows[0] ?? null;
  }

  private startSenders(workspaceId: string, broadcastId: string) {
    return Promise.all(
      Array.from({ length: SENDERS }, (_, i) =>
        this.o.jobs.add(SEND_TASK, { workspaceId, broadcastId }, { key: `broadcast-send:${broadcastId}:${i}` }),
      ),
    );
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
      ? {
          text: "SELECT profile_id FROM segment_memberships WHERE workspace_id = $1 AND segment_id = $2::uuid",
          values: [workspaceId, b.segment_id] as unknown[],
        }
      : await this.o.segments.membersOf(workspaceId, b.request.segmentDefinition!, broadcastId);
    const n = audience.values.length;
    const freeze = async (limit: string, started: boolean) => {
      const client = await this.o.pool.connect();
      try {
        return await inTransaction(client, async () => {
          const locked = await client.query(
            "SELECT 1 FROM broadcasts WHERE workspace_id = $1 AND id = $2 AND status = 'Queued' FOR UPDATE",
            [workspaceId, broadcastId],
          );
          if (locked.rowCount === 0) return false;
          await client.query(
            `INSERT INTO deliveries (workspace_id, id, user_id, channel, template_id, broadcast_id, status)
             SELECT $1, gen_random_uuid(), m.profile_id, $${n + 1}::"Channel", $${n + 2}::uuid, $${n + 3}::uuid, 'Queued'
             FROM (${audience.text} ${limit}) m
             ON CONFLICT DO NOTHING`,
            [...audience.values, b.channel, b.template_id, broadcastId],
          );
          await client.query(
            started
              ? `UPDATE broadcasts SET status = 'Running', updated_at = now(),
                   audience = (SELECT count(*) FROM deliveries WHERE workspace_id = $1 AND broadcast_id = $2)
                 WHERE workspace_id = $1 AND id = $2`
              : "UPDATE broadcasts SET started_at = coalesce(started_at, now()), updated_at = now() WHERE workspace_id = $1 AND id = $2",
            [workspaceId, broadcastId],
          );
          return true;
        });
      } finally {
        client.release();
      }
    };
    if (!(await freeze(`LIMIT ${FIRST_SLICE}`, false))) return;
    await this.startSenders(workspaceId, broadcastId);
    if (await freeze("", true)) await this.startSenders(workspaceId, broadcastId);
  }

  /** Claims and sends chunks until nothing is due; then completes the broadcast, or waits for retries. */
  async send(workspaceId: string, broadcastId: string) {
    for (;;) {
      const b = await this.load(workspaceId, broadcastId);
      // A Queued broadcast is still writing its audience; the first slice can go out.
      if (b?.status !== "Running" && b?.status !== "Queued") return;
      const sent = await this.o.deliverer.deliverBroadcastChunk(b, CHUNK);
      if (sent === 0) break;
      await this.o.pool.query("UPDATE broadcasts SET updated_at = now() WHERE workspace_id = $1 AND id = $2", [workspaceId, broadcastId]);
    }
    await this.finishOrWait(workspaceId, broadcastId);
  }

  /** Completes the broadcast when no delivery is pending; else schedules a sender for the next retry. */
  private async finishOrWait(workspaceId: string, broadcastId: string) {
    const { rows } = await this.o.pool.query<{ next: Date | null }>(
      "SELECT min(due_at) AS next FROM deliveries WHERE workspace_id = $1 AND broadcast_id = $2 AND status IN ('Queued', 'Sending')",
      [workspaceId, broadcastId],
    );
    const next = rows[0]?.next;
    if (!next) {
      const done = await this.o.pool.query(
        `UPDATE broadcasts SET status = 'Completed', completed_at = now(), updated_at = now()
         WHERE workspace_id = $1 AND id = $2 AND status = 'Running'
           AND NOT EXISTS (SELECT 1 FROM deliveries WHERE workspace_id = $1 AND broadcast_id = $2 AND status IN ('Queued', 'Sending'))`,
        [workspaceId, broadcastId],
      );
      if (done.rowCount) await releaseBroadcast(this.o.prisma, workspaceId, broadcastId);
      return;
    }
    // Retries wait in the future; a Sending row of a live sender is finished by that sender.
    if (next.getTime() > Date.now()) {
      await this.o.jobs.add(SEND_TASK, { workspaceId, broadcastId }, { key: `broadcast-retry:${broadcastId}`, runAt: next });
    }
  }

  /** Restarts broadcasts that stopped making progress (a worker died) and starts lost ones. */
  async tick() {
    const { rows } = await this.o.pool.query<{ workspace_id: string; id: string; status: string }>(
      `SELECT workspace_id, id, status FROM broadcasts
       WHERE (status = 'Running' AND updated_at < now() - interval '5 seconds')
          OR (status = 'Queued' AND created_at < now() - interval '5 seconds')`,
    );
    for (const r of rows) {
      if (r.status === "Queued")
        await this.o.jobs.add(START_TASK, { workspaceId: r.workspace_id, broadcastId: r.id }, { key: `broadcast-start:${r.id}` });
      else {
        await this.o.pool.query("UPDATE broadcasts SET updated_at = now() WHERE workspace_id = $1 AND id = $2", [r.workspace_id, r.id]);
        await this.startSenders(r.workspace_id, r.id);
      }
    }
  }
}
