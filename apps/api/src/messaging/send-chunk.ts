// Sends one chunk of a stream's deliveries (sources.ts): claim, pace, render, send through each
// channel's provider a slice at a time, mark — holding the claim's lease while the provider works
// (lease.ts; claims.ts and marks.ts hold the SQL and the rules).
import type { Channel } from "@tidings/schema";
import type pg from "pg";
import type { PrismaClient } from "../db/client.ts";
import type { Gatekeeper, Policies } from "../policies/index.ts";
import type { MessagingMetrics } from "./metrics.ts";
import type { JobLog } from "../jobs/index.ts";
import type { RenderPool } from "../templates/index.ts";
import type { ChannelSender, MayGo, OutgoingMessage, SendOutcome } from "./channels/types.ts";
import { type ClaimSpec, claimDeliveries } from "./claims.ts";
import { ChunkLease } from "./lease.ts";
import { type Marked, markDeliveries } from "./marks.ts";
import type { ProviderForSending } from "./providers/service.ts";
import { claimPastGate } from "./gated-claim.ts";
import { reserve } from "./pacing.ts";
import { ChunkRenderer, type RenderedChannel } from "./render-chunk.ts";
import type { SecretBox } from "../lib/secrets.ts";
import type { StreamRef, StreamSettings } from "./sources.ts";
import { errorText } from "../lib/errors.ts";
import { retryFor } from "../lib/time.ts";

/** A claim's size is chosen so that sending it takes about this long at the stream's last measured pace. */
const CHUNK_TARGET_MS = 2000;
/** Bounds of a claim: the first claim of a stream is FIRST_CHUNK (its pace is not known yet). */
const MIN_CHUNK = 10;
const FIRST_CHUNK = 100;
const MAX_CHUNK = 2000;
/**
 * Messages handed to an unpaced provider between two looks at the claim's lease: when a lease
 * turns out lost, at most this many of its rows were sent after it ran out.
 */
const SEND_SLICE = 256;

/** One sender per provider type; each takes its own rendered shape and config (checked where it is built). */
// biome-ignore lint/suspicious/noExplicitAny: the map holds senders of different message and config types
export type Senders = Record<ProviderForSending["type"], ChannelSender<any, any>>;

export interface DelivererOptions {
  pool: pg.Pool;
  prisma: PrismaClient;
  box: SecretBox;
  senders: Senders;
  renders: RenderPool;
  /** Delivery policies: the gate each claimed chunk passes, provider rates. */
  gatekeeper: Gatekeeper;
  leaseSeconds: number;
  metrics: MessagingMetrics;
  log: JobLog;
  /** Messages handed to an unpaced provider between two looks at the lease (default SEND_SLICE). */
  sendSlice?: number;
}

/** A claimed chunk, rendered: how many rows were claimed, and what sends and marks them. */
export interface Chunk {
  /** Rows claimed (0: none was due). */
  picked: number;
  /**
   * Sends and marks the chunk (call it once, soon: the claim's lease is renewed until it ends, or
   * until `drop`).
   */
  send(): Promise<void>;
  /** Gives the claim up unsent (its lease is no longer renewed: its rows are claimed again after it). */
  drop(): void;
}

export class Deliverer {
  /** Milliseconds per message of each stream's last chunk (sizes the next claim). */
  private pace = new Map<string, { ms: number; size: number }>();

  private renderer: ChunkRenderer;

  constructor(private o: DelivererOptions) {
    this.renderer = new ChunkRenderer(o);
  }

  private claimSize(workspaceId: string, stream: StreamRef, settings: StreamSettings) {
    const last = this.pace.get(`${workspaceId}:${stream.id}`);
    // Sized to the last pace, growing at most twofold a chunk: a stream that wakes to a backlog
    // starts sending at once and reaches its size while its first chunks send.
    let n =
      last === undefined
        ? FIRST_CHUNK
        : Math.min(Math.round(CHUNK_TARGET_MS / Math.max(last.ms, 0.001)), Math.max(FIRST_CHUNK, 2 * last.size));
    // A paced stream claims about a second's worth: its sender waits for its slot, not for a chunk.
    if (settings.rateLimitPerSecond) n = Math.min(n, settings.rateLimitPerSecond);
    return Math.max(1, Math.min(MAX_CHUNK, Math.max(n, settings.rateLimitPerSecond ? 1 : MIN_CHUNK)));
  }

  /**
   * Claims up to one chunk of the stream's due deliveries, passes the policies' gate and renders
   * them; the chunk's `send()` then sends and marks them. The claim's lease is renewed until every
   * claimed row is marked.
   */
  async claimChunk(workspaceId: string, stream: StreamRef, settings: StreamSettings): Promise<Chunk> {
    const claimedAt = performance.now();
    const policies = await this.o.gatekeeper.policies(this.o.pool, workspaceId);
    const spec: ClaimSpec = {
      workspaceId,
      stream,
      limit: this.claimSize(workspaceId, stream, settings),
      leaseSeconds: this.o.leaseSeconds,
      contactTraits: await this.renderer.contactTraits(workspaceId, settings),
    };
    const holds = this.o.gatekeeper.holds(policies);
    const { picked, skipped, toSend, ids } = holds
      ? await claimPastGate(this.o.pool, this.o.gatekeeper, spec, policies, (err) =>
          this.o.log("warn", `claiming past the delivery policies stopped early; sending what was claimed: ${errorText(err)}`),
        )
      : await claimDeliveries(this.o.pool, spec);
    for (const channel of skipped) this.o.metrics.deliveries.inc({ channel, status: "Skipped" });
    // Journeys go on from the messages the gate decided (held ones included) once they are marked.
    const decided = async () => {
      if (holds && picked > 0) await settings.decided?.(ids);
    };
    if (toSend.length === 0) {
      await decided();
      return { picked, send: async () => {}, drop: () => {} };
    }
    const { pool, leaseSeconds, log } = this.o;
    const rows = toSend.map((c) => ({ id: c.id, attempts: c.attempts }));
    const lease = new ChunkLease({ pool, workspaceId, rows, leaseSeconds, log }, claimedAt);
    let rendered: RenderedChannel[];
    try {
      rendered = await this.renderer.render(workspaceId, toSend, settings);
    } catch (err) {
      lease.stop();
      throw err;
    }
    const send = async () => {
      const started = performance.now();
      try {
        if (settings.rateLimitPerSecond)
          await reserve(this.o.pool, workspaceId, `${stream.column}:${stream.id}`, toSend.length, settings.rateLimitPerSecond);
        for (const r of rendered) await this.sendRendered(workspaceId, r, policies, lease);
        // No renewal runs beside the mark (lease.ts); a row lost is another sender's to mark (the
        // statement would pass it by anyway).
        await lease.settle();
        await this.mark(
          workspaceId,
          rendered.flatMap((r) => r.marks.filter((m) => !lease.lost.has(m.id))),
        );
      } finally {
        lease.stop();
      }
      await decided();
      this.pace.set(`${workspaceId}:${stream.id}`, { ms: (performance.now() - started) / toSend.length, size: toSend.length });
      if (this.pace.size > 1000) this.pace.delete(this.pace.keys().next().value!);
    };
    return { picked, send, drop: () => lease.stop() };
  }

  /** Sends one channel's rendered messages; counts every outcome (but a lost row's). */
  private async sendRendered(workspaceId: string, r: RenderedChannel, policies: Policies, lease: ChunkLease) {
    if (r.outgoing.length > 0) await this.sendThrough(workspaceId, r.channel, r.provider, r.outgoing, policies, lease);
    for (const m of r.marks) {
      if (lease.lost.has(m.id)) continue;
      const status = m.outcome.status === "sent" ? "Sent" : m.outcome.status === "failed" ? "Failed" : "Retry";
      this.o.metrics.deliveries.inc({ channel: r.channel, status });
    }
  }

  /** Hands rendered messages to the channel's provider; each message's mark gets its outcome. */
  private async sendThrough(
    workspaceId: string,
    channel: Channel,
    provider: ProviderForSending | null,
    outgoing: { msg: OutgoingMessage; mark: Marked }[],
    policies: Policies,
    lease: ChunkLease,
  ) {
    // Webhooks are built in (a provider row only adds the signing secret); other channels
    // without a provider use the embedded default, Log.
    const type = provider?.type ?? (channel === "Webhook" ? "Webhook" : "Log");
    const rate = this.o.gatekeeper.providerRate(policies, type);
    // A paced provider gets a fiftieth of a second's worth at a time, each reserved on the shared
    // row, at 96 % of its rate: spread over the second, and answers arriving late never tip a
    // second over it.
    const size = rate ? Math.max(1, Math.floor(rate.perSecond / 50)) : (this.o.sendSlice ?? SEND_SLICE);
    // A slice is answered before the next is reserved: nothing queues up behind a slow answer to go
    // out in a burst later (the stream's other senders keep the pace meanwhile). Each slice goes
    // out under a lease known to hold, and no message of it goes on the wire once another sender
    // has claimed its row (a renewal while the slice is sent may find that).
    let passed = 0;
    const mayGo: MayGo = (m) => {
      if (!lease.lost.has(m.deliveryId)) return true;
      passed++;
      return false;
    };
    for (let i = 0; i < outgoing.length; i += size) {
      const part = outgoing.slice(i, i + size);
      if (rate) await reserve(this.o.pool, workspaceId, `provider:${provider?.id ?? type}`, part.length, rate.perSecond * 0.96, rate.burst);
      await lease.hold();
      const slice = part.filter((o) => mayGo(o.msg));
      if (slice.length > 0) await this.sendSlice(type, provider, slice, mayGo);
    }
    if (passed > 0)
      this.o.log(
        "warn",
        `${passed} deliveries were not sent: they are no longer this sender's (its lease ran out before it renewed it, and another sender claimed them)`,
      );
  }

  private async sendSlice(
    type: ProviderForSending["type"],
    provider: ProviderForSending | null,
    outgoing: { msg: OutgoingMessage; mark: Marked }[],
    mayGo: MayGo,
  ) {
    const started = performance.now();
    let outcomes: SendOutcome[];
    try {
      outcomes = await this.o.senders[type].send(
        outgoing.map((o) => o.msg),
        provider?.config ?? {},
        mayGo,
      );
    } catch (err) {
      outcomes = outgoing.map(() => ({ status: "retry", reason: `sender error: ${errorText(err)}` }));
    }
    this.o.metrics.providerSeconds.observe({ provider: type }, (performance.now() - started) / 1000);
    outgoing.forEach((o, i) => {
      o.mark.outcome = outcomes[i] ?? { status: "retry", reason: "no outcome from the sender" };
    });
  }

  /**
   * Records the outcomes; while the database is unreachable, tries again (for up to twice the
   * lease, no longer renewed: renewals fail then too) rather than leaving sent messages to be
   * claimed and sent once more.
   */
  private mark(workspaceId: string, marks: Marked[]) {
    return retryFor(
      this.o.leaseSeconds * 2000,
      () => markDeliveries(this.o.pool, workspaceId, marks),
      (err) => this.o.log("warn", `recording ${marks.length} delivery outcomes failed (${errorText(err)}); trying again`),
    );
  }
}
