// Senders on the job layer's sending lane. A stream (sources.ts) is sent by at most `SENDERS`
// sender jobs at once across every process (one when it is paced): each holds its slot's session
// advisory lock, so liveness is PostgreSQL's own (a dead process's locks are gone at once), never
// a progress stamp. A sender sends chunks for a bounded slice, then yields: it frees its slot and
// enqueues its successor. A tick every second gives a sender to each active stream that has work
// due and no live sender (a worker died, a start was lost), and reports drained streams.
import pg from "pg";
import { ident, type Sql, sql } from "../db/sql.ts";
import type { JobLayer, JobLog } from "../jobs/index.ts";
import { addJobQuery } from "../jobs/index.ts";
import type { Deliverer } from "./send-chunk.ts";
import { dueAround, nextDue } from "./claims.ts";
import type { DeliverySource, StreamRef } from "./sources.ts";
import { errorText } from "../lib/errors.ts";
import { sleep } from "../lib/time.ts";

const SEND_TASK = "deliveries.send";
const TICK_TASK = "deliveries.tick";
/** Parallel senders of an unpaced stream. */
const SENDERS = 4;
/** A first chunk this large means a backlog: slot 0 wakes the stream's other senders. */
const BACKLOG = 100;
/** A claim that found the due rows held by others' claims is tried again after this long. */
const CLAIM_AGAIN_MS = 50;
/** How long a sender claims chunks before it yields its job slot (a chunk under way finishes). */
const SLICE_MS = 5000;
/** Two-key advisory lock space of the senders' slots (the second key is hashtext(kind:workspace:id:slot)). */
const SLOT_LOCK_SPACE = 0x7464736e; // "tdsn"
/** How long a sender over its workspace's share waits in the queue before it looks again. */
const SHARE_WAIT_MS = 1000;

interface SendPayload {
  kind: string;
  workspaceId: string;
  id: string;
  slot: number;
  /** Scheduled for a due moment (a retry, a release): a backlog found then wakes the other slots. */
  due?: true;
}

export interface SendJobsOptions {
  pool: pg.Pool;
  /** Where the senders' slot locks are held: a pool of its own (the sending lane's size), a connection per running sender. */
  connectionString: string;
  jobs: JobLayer;
  /**
   * Senders of one workspace running at once in this process (default: half the sending lane's
   * slots, at least 1): a workspace whose providers are slow holds at most these, so the others'
   * senders always find a slot. A sender over it waits a second in the queue, holding no slot.
   */
  perWorkspace?: number;
  deliverer: Deliverer;
  leaseSeconds: number;
  log: JobLog;
}

// Ids are chosen by clients, so two workspaces may use the same one: every key names the workspace.
const slotKey = (p: SendPayload) => `${p.kind}:${p.workspaceId}:${p.id}:${p.slot}`;
const jobKey = (p: SendPayload) => `send:${slotKey(p)}`;
/** Whether a live sender holds a slot's lock (SQL expressions of the stream's kind, workspace, id and slot). */
const slotHeld = (kind: Sql, workspaceId: Sql, id: Sql, slot: Sql) => sql`EXISTS (SELECT 1 FROM pg_locks l
    WHERE l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND l.objsubid = 2 AND l.classid = ${SLOT_LOCK_SPACE}::int8::oid AND l.objid = (hashtext(${kind} || ':' || ${workspaceId} || ':' || ${id} || ':' || ${slot})::int8 & 4294967295)::oid)`;

export class SendJobs {
  private sources = new Map<string, DeliverySource>();
  /** Senders running in this process, per workspace. */
  private running = new Map<string, number>();
  private readonly perWorkspace: number;
  /** The slot locks' connections, apart from the pool that claims and marks: a held lock never starves a query. */
  private readonly locks: pg.Pool;

  constructor(private o: SendJobsOptions) {
    const slots = o.jobs.slots("send");
    this.perWorkspace = o.perWorkspace ?? Math.max(1, Math.floor(slots / 2));
    this.locks = new pg.Pool({
      connectionString: o.connectionString,
      max: Math.max(1, slots),
      idleTimeoutMillis: 30_000,
      application_name: "tidings-send-slots",
    });
    this.locks.on("error", (err) => o.log("warn", `idle slot-lock connection failed: ${err.message}`));
  }

  /** Ends the slot locks' connections (after the job layer stopped: no sender runs). */
  async close() {
    await this.locks.end();
  }

  /** Adds a kind of source; call before `register()`. */
  addSource(source: DeliverySource) {
    if (this.sources.has(source.kind)) throw new Error(`delivery source ${source.kind} is added twice`);
    this.sources.set(source.kind, source);
  }

  register() {
    this.o.jobs.register(SEND_TASK, (p: SendPayload, job) => this.send(p, job.stopping), { lane: "send" });
    this.o.jobs.register(TICK_TASK, () => this.tick());
    this.o.jobs.recurring(TICK_TASK, 1);
  }

  /**
   * The statements that start a stream's senders, to run in the transaction that queues its
   * deliveries (the senders exist iff the deliveries do). `paced`: one sender.
   */
  wakeQueries(kind: string, workspaceId: string, id: string, paced: boolean): Sql[] {
    return Array.from({ length: paced ? 1 : SENDERS }, (_, slot) =>
      addJobQuery(SEND_TASK, { kind, workspaceId, id, slot } satisfies SendPayload, { key: jobKey({ kind, workspaceId, id, slot }) }),
    );
  }

  /**
   * The statement that queues a stream's deliveries in the source's transaction (then `wakeQueries`
   * in it, or `wakeIdle` after it). `rows`: a query of user_id, channel, template_id,
   * subscription_group_id, context, run_id, node_id, category, hold_action, due_at (NULL: none,
   * now). A row the stream has (unique per source) is not queued again. Only messaging writes deliveries.
   */
  queueStatement(kind: string, workspaceId: string, id: string, rows: Sql): Sql {
    const column = ident(this.source(kind).column);
    return sql`INSERT INTO deliveries (workspace_id, id, user_id, channel, template_id, ${column}, run_id, node_id, subscription_group_id, context, category, hold_action, status, due_at)
        SELECT ${workspaceId}::uuid, gen_random_uuid(), r.user_id, r.channel::"Channel", r.template_id, ${id}::uuid, r.run_id, r.node_id,
          r.subscription_group_id, r.context, r.category, r.hold_action, 'Queued', coalesce(r.due_at, now())
        FROM (${rows}) r
        ON CONFLICT DO NOTHING`;
  }

  /**
   * After a commit that queued deliveries while the senders usually run (a journey's batches): a
   * sender in each slot no live sender holds; a live one takes the new rows itself (`slice`,
   * `idle`). In the transaction, a running keyed job is not replaced: each batch made a job per
   * slot that found its slot taken. A start lost with a dying process is the tick's to give.
   */
  async wakeIdle(kind: string, workspaceId: string, id: string, paced: boolean) {
    try {
      const { rows } = await this.o.pool.query<{ slot: number }>(
        sql`SELECT slot FROM generate_series(0, ${paced ? 0 : SENDERS - 1}::int) AS slot
         WHERE NOT ${slotHeld(sql`${kind}::text`, sql`${workspaceId}::text`, sql`${id}::text`, sql`slot`)}`,
      );
      for (const { slot } of rows) await this.start({ kind, workspaceId, id, slot });
    } catch (err) {
      this.o.log("warn", `starting the senders of ${kind} ${id} failed (the tick will): ${errorText(err)}`);
    }
  }

  /** Adds the job of one slot's sender, to run now (a `due` sender's payload becomes a plain one). */
  private start(p: SendPayload) {
    const { kind, workspaceId, id, slot } = p;
    return this.o.jobs.add(SEND_TASK, { kind, workspaceId, id, slot } satisfies SendPayload, { key: jobKey(p) });
  }

  /** Starts a stream's senders now (a slot whose sender is running keeps it; see `send`). */
  async wake(kind: string, workspaceId: string, id: string, paced: boolean) {
    for (const q of this.wakeQueries(kind, workspaceId, id, paced)) await this.o.pool.query(q);
  }

  private source(kind: string) {
    const source = this.sources.get(kind);
    if (!source) throw new Error(`unknown delivery source ${kind}`);
    return source;
  }

  /**
   * One sender's slice, within its workspace's share of this process's senders: take the slot (or
   * leave: a live sender has it), send, yield or report.
   */
  async send(p: SendPayload, stopping?: AbortSignal) {
    const running = this.running.get(p.workspaceId) ?? 0;
    if (running >= this.perWorkspace) {
      await this.o.jobs.add(SEND_TASK, p, { key: jobKey(p), runAt: new Date(Date.now() + SHARE_WAIT_MS) });
      return;
    }
    this.running.set(p.workspaceId, running + 1);
    let next: "more" | "idle" | "stopped" = "stopped";
    try {
      next = await this.sendInSlot(p, stopping);
    } finally {
      const left = (this.running.get(p.workspaceId) ?? 1) - 1;
      if (left > 0) this.running.set(p.workspaceId, left);
      else this.running.delete(p.workspaceId);
    }
    // With the slot and its share free (a successor taken up here would wait a second over the share).
    if (next === "more") await this.start(p).catch((err) => this.o.log("warn", `re-queueing a sender failed: ${errorText(err)}`));
    else if (next === "idle") await this.idle(this.source(p.kind), p);
  }

  private async sendInSlot(p: SendPayload, stopping?: AbortSignal): Promise<"more" | "idle" | "stopped"> {
    const source = this.source(p.kind);
    const stream: StreamRef = { column: source.column, id: p.id };
    const client = await this.locks.connect();
    let lost: Error | undefined;
    // The lock's connection may fail while the slice runs (a database restart): stop claiming.
    const onError = (err: Error) => {
      lost = err;
    };
    client.on("error", onError);
    let next: "more" | "idle" | "stopped" = "stopped";
    try {
      const { rows } = await client.query<{ ok: boolean }>(
        sql`SELECT pg_try_advisory_lock(${SLOT_LOCK_SPACE}, hashtext(${slotKey(p)})) AS ok`,
      );
      if (!rows[0]?.ok) return "stopped";
      try {
        next = await this.slice(source, p, stream, () => lost !== undefined || stopping?.aborted === true);
      } finally {
        await client.query(sql`SELECT pg_advisory_unlock(${SLOT_LOCK_SPACE}, hashtext(${slotKey(p)}))`).catch((err: Error) => {
          lost ??= err; // dropping the connection frees the lock
        });
      }
    } finally {
      client.off("error", onError);
      client.release(lost);
    }
    return next;
  }

  /**
   * Chunks until nothing is due, the slice is over, or `stop()` holds (the lock is lost, the process
   * stops); a chunk under way finishes. The sender scheduled for a due moment that finds a backlog
   * there (a release of deferred messages, a local-time send) wakes the stream's other slots.
   */
  private async slice(source: DeliverySource, p: SendPayload, stream: StreamRef, stop: () => boolean) {
    const until = Date.now() + SLICE_MS;
    let woken = p.due !== true;
    while (!stop()) {
      const settings = await source.settings(p.workspaceId, stream.id);
      if (!settings) return "stopped";
      const chunk = await this.o.deliverer.claimChunk(p.workspaceId, stream, settings);
      if (chunk.picked === 0) {
        // Rows due that the claim did not get are held by another sender's claim under way, or
        // were queued since it began: claim again shortly, in this slot, rather than end.
        const next = await nextDue(this.o.pool, p.workspaceId, stream, this.o.leaseSeconds);
        if (!next || next.getTime() > Date.now()) return "idle";
        if (Date.now() >= until) return "more";
        await sleep(CLAIM_AGAIN_MS);
        continue;
      }
      if (!woken && chunk.picked >= BACKLOG)
        await this.wake(source.kind, p.workspaceId, p.id, settings.rateLimitPerSecond !== null).catch((err: unknown) => {
          chunk.drop(); // else its lease would be renewed for as long as the process lives, its rows never sent
          throw err;
        });
      woken = true;
      await chunk.send();
      if (Date.now() >= until) return "more";
    }
    return "more"; // for a successor here or in another process (or the tick, once the database is back)
  }

  /**
   * Nothing due now: the stream is drained, or a sender is scheduled for its next due moment (a
   * retry, a release) — every slot's sender when a backlog falls due then (a window's opening).
   */
  private async idle(source: DeliverySource, p: SendPayload) {
    const { workspaceId } = p;
    const stream: StreamRef = { column: source.column, id: p.id };
    const next = await nextDue(this.o.pool, workspaceId, stream, this.o.leaseSeconds);
    if (!next) await source.drained?.(workspaceId, stream.id);
    // Queued after this sender last looked (with its slot held), by a source that does not wake a
    // slot whose sender is live (`wakeIdle`): this slot goes on.
    else if (next.getTime() <= Date.now()) await this.start(p);
    else {
      const backlog = (await dueAround(this.o.pool, workspaceId, stream, next, BACKLOG)) >= BACKLOG;
      const paced = backlog && (await source.settings(workspaceId, stream.id))?.rateLimitPerSecond != null;
      for (let slot = 0; slot < (backlog && !paced ? SENDERS : 1); slot++)
        await this.o.jobs.add(
          SEND_TASK,
          { ...p, slot, due: true },
          { key: jobKey({ ...p, slot }), runAt: next, keyMode: "preserve_run_at" },
        );
    }
  }

  /** Gives a sender to every active stream with work due and no live sender; reports drained ones. */
  async tick() {
    for (const source of this.sources.values()) {
      const streams = await source.activeStreams();
      if (streams.length === 0) continue;
      const { rows: idle } = await this.o.pool.query<{ workspace_id: string; id: string }>(
        sql`SELECT a.workspace_id, a.id FROM unnest(${streams.map((s) => s.workspaceId)}::uuid[], ${streams.map((s) => s.id)}::uuid[]) AS a(workspace_id, id)
         WHERE NOT EXISTS (SELECT 1 FROM generate_series(0, ${SENDERS}::int - 1) AS slot
           WHERE ${slotHeld(sql`${source.kind}::text`, sql`a.workspace_id::text`, sql`a.id::text`, sql`slot`)})`,
      );
      for (const r of idle) {
        try {
          const stream: StreamRef = { column: source.column, id: r.id };
          const next = await nextDue(this.o.pool, r.workspace_id, stream, this.o.leaseSeconds);
          if (!next) await source.drained?.(r.workspace_id, r.id);
          else if (next.getTime() <= Date.now()) {
            const settings = await source.settings(r.workspace_id, r.id);
            if (settings) await this.wake(source.kind, r.workspace_id, r.id, settings.rateLimitPerSecond !== null);
          }
        } catch (err) {
          this.o.log("error", `tick of ${source.kind} ${r.id} failed: ${errorText(err)}`);
        }
      }
    }
  }
}
