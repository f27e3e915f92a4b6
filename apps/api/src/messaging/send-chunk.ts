// Sends one chunk of a stream's deliveries (sources.ts): claim, pace, render, send through each
// channel's provider, mark — renewing the claim's lease while the provider works (claims.ts
// holds the SQL and the rules).
import type { Channel, MessageTemplateDefinition } from "@tidings/schema";
import type pg from "pg";
import type { PrismaClient } from "../db/client.ts";
import { sql } from "../db/sql.ts";
import type { Gatekeeper, Policies } from "../policies/index.ts";
import type { MessagingMetrics } from "./metrics.ts";
import type { JobLog } from "../jobs/index.ts";
import type { RenderPool } from "../templates/index.ts";
import type { ChannelSender, OutgoingMessage, SendOutcome } from "./channels/types.ts";
import {
  type Claimed,
  type ClaimSpec,
  claimDeliveries,
  contactTrait,
  type Marked,
  markDeliveries,
  markOf,
  messageInput,
  renewLeases,
  toOutgoing,
} from "./claims.ts";
import { type ProviderForSending, ProviderUnusableError, providerForSending } from "./providers/service.ts";
import { claimPastGate } from "./gated-claim.ts";
import { reserve } from "./pacing.ts";
import { ReadCache } from "./read-cache.ts";
import type { SecretBox } from "../lib/secrets.ts";
import type { StreamRef, StreamSettings } from "./sources.ts";
import { errorText } from "../lib/errors.ts";
import { backoffMs, sleep } from "../lib/time.ts";

/** A claim's size is chosen so that sending it takes about this long at the stream's last measured pace. */
const CHUNK_TARGET_MS = 2000;
/** Bounds of a claim: the first claim of a stream is FIRST_CHUNK (its pace is not known yet). */
const MIN_CHUNK = 10;
const FIRST_CHUNK = 100;
const MAX_CHUNK = 2000;

const CHANNELS: Channel[] = ["Email", "Sms", "MobilePush", "Webhook"];

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
}

/** A workspace's provider for a channel, or why it cannot be used. */
interface ChannelContext {
  provider: ProviderForSending | null;
  providerError: string | null;
}

export class Deliverer {
  /** What is read once per few seconds rather than per chunk. */
  private channels = new ReadCache<ChannelContext>(5000);
  private workspaces = new ReadCache<{ id: string; name: string }>(5000);
  /** Milliseconds per message of each stream's last chunk (sizes the next claim). */
  private pace = new Map<string, number>();

  constructor(private o: DelivererOptions) {}

  private channel(workspaceId: string, channel: Channel): Promise<ChannelContext> {
    return this.channels.get(`${workspaceId}:${channel}`, async () => {
      try {
        return { provider: await providerForSending(this.o.prisma, this.o.box, workspaceId, channel), providerError: null };
      } catch (err) {
        // A provider that cannot be used fails its deliveries with the reason; anything else
        // (the database) fails the chunk, to be tried again, and is not cached.
        if (!(err instanceof ProviderUnusableError)) throw err;
        this.o.log("warn", `workspace ${workspaceId}: ${err.message}`);
        return { provider: null, providerError: err.message };
      }
    });
  }

  private workspace(workspaceId: string) {
    return this.workspaces.get(workspaceId, () =>
      this.o.prisma.workspace.findUniqueOrThrow({ where: { id: workspaceId }, select: { id: true, name: true } }),
    );
  }

  /** Each channel's contact trait; for a stream of one template, only its channel is looked up. */
  private async contactTraits(workspaceId: string, settings: StreamSettings) {
    const traits: Partial<Record<Channel, string>> = {};
    for (const channel of settings.template ? [settings.template.type] : CHANNELS) {
      const type = channel === "MobilePush" ? ((await this.channel(workspaceId, channel)).provider?.type ?? null) : null;
      const trait = contactTrait(channel, type);
      if (trait) traits[channel] = trait;
    }
    return traits;
  }

  /** The definitions of the rows' templates (streams whose deliveries name their own). */
  private async templates(workspaceId: string, claimed: Claimed[]) {
    const ids = [...new Set(claimed.map((c) => c.templateId).filter((id): id is string => id !== null))];
    const out = new Map<string, MessageTemplateDefinition>();
    if (ids.length === 0) return out;
    const { rows } = await this.o.pool.query<{ id: string; definition: MessageTemplateDefinition | null }>(
      sql`SELECT id, definition FROM message_templates WHERE workspace_id = ${workspaceId} AND id = ANY(${ids}::uuid[])`,
    );
    for (const r of rows) if (r.definition) out.set(r.id, r.definition);
    return out;
  }

  private claimSize(workspaceId: string, stream: StreamRef, settings: StreamSettings) {
    const ms = this.pace.get(`${workspaceId}:${stream.id}`);
    let n = ms === undefined ? FIRST_CHUNK : Math.round(CHUNK_TARGET_MS / Math.max(ms, 0.001));
    // A paced stream claims about a second's worth: its sender waits for its slot, not for a chunk.
    if (settings.rateLimitPerSecond) n = Math.min(n, settings.rateLimitPerSecond);
    return Math.max(1, Math.min(MAX_CHUNK, Math.max(n, settings.rateLimitPerSecond ? 1 : MIN_CHUNK)));
  }

  /**
   * Claims, sends and marks up to one chunk of the stream's due deliveries; returns how many it
   * claimed (0: none due). The claim's lease is renewed until every claimed row is marked.
   */
  async deliverChunk(workspaceId: string, stream: StreamRef, settings: StreamSettings): Promise<number> {
    const policies = await this.o.gatekeeper.policies(this.o.pool, workspaceId);
    const spec: ClaimSpec = {
      workspaceId,
      stream,
      limit: this.claimSize(workspaceId, stream, settings),
      leaseSeconds: this.o.leaseSeconds,
      contactTraits: await this.contactTraits(workspaceId, settings),
    };
    const { picked, skipped, toSend, ids } = this.o.gatekeeper.holds(policies)
      ? await claimPastGate(this.o.pool, this.o.gatekeeper, spec, policies)
      : await claimDeliveries(this.o.pool, spec);
    for (const channel of skipped) this.o.metrics.deliveries.inc({ channel, status: "Skipped" });
    const holds = this.o.gatekeeper.holds(policies);
    if (toSend.length === 0) {
      if (holds && picked > 0) await settings.decided?.(ids);
      return picked;
    }
    const started = performance.now();
    const sending = toSend.map((c) => c.id);
    const renewal = setInterval(
      () =>
        renewLeases(this.o.pool, workspaceId, sending).catch((err) =>
          this.o.log("warn", `renewing delivery leases failed: ${errorText(err)}`),
        ),
      (this.o.leaseSeconds * 1000) / 3,
    );
    try {
      if (settings.rateLimitPerSecond)
        await reserve(this.o.pool, workspaceId, `${stream.column}:${stream.id}`, toSend.length, settings.rateLimitPerSecond);
      const marks = await this.send(workspaceId, toSend, settings, policies);
      await this.mark(workspaceId, marks);
    } finally {
      clearInterval(renewal);
    }
    if (holds) await settings.decided?.(ids);
    this.pace.set(`${workspaceId}:${stream.id}`, (performance.now() - started) / toSend.length);
    if (this.pace.size > 1000) this.pace.delete(this.pace.keys().next().value!);
    return picked;
  }

  /** Renders and sends the claimed rows, channel by channel; answers every row's outcome. */
  private async send(workspaceId: string, claimed: Claimed[], settings: StreamSettings, policies: Policies): Promise<Marked[]> {
    const [workspace, templates] = await Promise.all([
      this.workspace(workspaceId),
      settings.template ? new Map<string, MessageTemplateDefinition>() : this.templates(workspaceId, claimed),
    ]);
    const marks: Marked[] = [];
    const byChannel = new Map<Channel, Claimed[]>();
    for (const c of claimed) {
      const rows = byChannel.get(c.channel);
      if (rows) rows.push(c);
      else byChannel.set(c.channel, [c]);
    }
    for (const [channel, rows] of byChannel) {
      const { provider, providerError } = await this.channel(workspaceId, channel);
      const trait = contactTrait(channel, provider?.type ?? null);
      const contactOf = (c: Claimed) => (trait ? String(c.traits[trait]) : null);
      const outgoing: { msg: OutgoingMessage; mark: Marked }[] = [];
      const channelMarks: Marked[] = [];
      const fail = (c: Claimed, reason: string) =>
        channelMarks.push({ ...markOf(c), outcome: { status: "failed", reason }, contact: contactOf(c) });
      // Rendered in the render threads, a batch per template.
      const byTemplate = new Map<MessageTemplateDefinition, Claimed[]>();
      for (const c of rows) {
        const template = settings.template ?? (c.templateId ? templates.get(c.templateId) : undefined);
        if (providerError) fail(c, providerError);
        else if (!template) fail(c, `template ${c.templateId ?? "(none)"} is missing or has no definition`);
        else byTemplate.set(template, [...(byTemplate.get(template) ?? []), c]);
      }
      for (const [template, group] of byTemplate) {
        const results = await this.o.renders.renderMessages(
          template,
          group.map((c) => messageInput(workspace, c)),
        );
        group.forEach((c, i) => {
          const r = results[i]!;
          if (!r.ok) {
            fail(c, r.reason);
            return;
          }
          const contact = contactOf(c);
          const mark: Marked = { ...markOf(c), outcome: { status: "sent" }, contact, rendered: r.rendered };
          channelMarks.push(mark);
          outgoing.push({ msg: toOutgoing(workspaceId, c, r.rendered, contact, r.unsubscribeUrl), mark });
        });
      }
      marks.push(...channelMarks);
      if (outgoing.length > 0) await this.sendThrough(workspaceId, channel, provider, outgoing, policies);
      for (const m of channelMarks) {
        const status = m.outcome.status === "sent" ? "Sent" : m.outcome.status === "failed" ? "Failed" : "Retry";
        this.o.metrics.deliveries.inc({ channel, status });
      }
    }
    return marks;
  }

  /** Hands rendered messages to the channel's provider; each message's mark gets its outcome. */
  private async sendThrough(
    workspaceId: string,
    channel: Channel,
    provider: ProviderForSending | null,
    outgoing: { msg: OutgoingMessage; mark: Marked }[],
    policies: Policies,
  ) {
    // Webhooks are built in (a provider row only adds the signing secret); other channels
    // without a provider use the embedded default, Log.
    const type = provider?.type ?? (channel === "Webhook" ? "Webhook" : "Log");
    const rate = this.o.gatekeeper.providerRate(policies, type);
    // A paced provider gets a fiftieth of a second's worth at a time, each reserved on the shared
    // row, at 96 % of its rate: spread over the second, and answers arriving late never tip a
    // second over it.
    const size = rate ? Math.max(1, Math.floor(rate.perSecond / 50)) : outgoing.length;
    // A slice is answered before the next is reserved: nothing queues up behind a slow answer to go
    // out in a burst later (the stream's other senders keep the pace meanwhile).
    for (let i = 0; i < outgoing.length; i += size) {
      const slice = outgoing.slice(i, i + size);
      if (rate)
        await reserve(this.o.pool, workspaceId, `provider:${provider?.id ?? type}`, slice.length, rate.perSecond * 0.96, rate.burst);
      await this.sendSlice(type, provider, slice);
    }
  }

  private async sendSlice(
    type: ProviderForSending["type"],
    provider: ProviderForSending | null,
    outgoing: { msg: OutgoingMessage; mark: Marked }[],
  ) {
    const started = performance.now();
    let outcomes: SendOutcome[];
    try {
      outcomes = await this.o.senders[type].send(
        outgoing.map((o) => o.msg),
        provider?.config ?? {},
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
   * Records the outcomes; while the database is unreachable, tries again (the lease keeps being
   * renewed meanwhile) rather than leaving sent messages to be claimed and sent once more.
   */
  private async mark(workspaceId: string, marks: Marked[]) {
    const deadline = Date.now() + this.o.leaseSeconds * 2000;
    for (let attempt = 0; ; attempt++) {
      try {
        await markDeliveries(this.o.pool, workspaceId, marks);
        return;
      } catch (err) {
        if (Date.now() > deadline) throw err;
        this.o.log("warn", `recording ${marks.length} delivery outcomes failed (${errorText(err)}); trying again`);
        await sleep(backoffMs(attempt));
      }
    }
  }
}
