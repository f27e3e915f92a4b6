// Sends one chunk of a broadcast's deliveries: pace, claim, render, send through the channel's
// provider, mark (dispatch.ts holds the SQL and the rules).
import type { MessageTemplateDefinition } from "@tidings/schema";
import type pg from "pg";
import type { PrismaClient } from "../db/client.ts";
import type { Metrics } from "../http/metrics.ts";
import type { ChannelSender, OutgoingMessage, SendOutcome } from "./channels/types.ts";
import {
  claimBroadcastDeliveries,
  contactTrait,
  type Marked,
  markDeliveries,
  type RenderContext,
  renderFor,
  scopeFor,
  toOutgoing,
} from "./dispatch.ts";
import { type ProviderForSending, providerForSending } from "./providers/service.ts";
import type { SecretBox } from "./secrets.ts";
import type { RenderScope } from "../templates/liquid.ts";

/** Providers' own documented limits, enforced across workers (messages per second). */
const PROVIDER_RATE: Partial<Record<string, number>> = { Expo: 600 };

/** One sender per provider type; each takes its own rendered shape and config (checked where it is built). */
// biome-ignore lint/suspicious/noExplicitAny: the map holds senders of different message and config types
export type Senders = Record<ProviderForSending["type"], ChannelSender<any, any>>;

export interface DelivererOptions {
  pool: pg.Pool;
  prisma: PrismaClient;
  box: SecretBox;
  senders: Senders;
  renderEmail: (t: Extract<MessageTemplateDefinition, { type: "Email" }>, scope: RenderScope) => Promise<unknown>;
  publicUrl: string;
  secretKey: string;
  leaseSeconds: number;
  metrics: Metrics;
}

interface BroadcastToSend {
  workspace_id: string;
  id: string;
  template: MessageTemplateDefinition;
  channel: string;
  subscription_group_id: string | null;
  rate_limit_per_second: number | null;
}

interface ChunkContext {
  provider: ProviderForSending | null;
  providerError: string | null;
  group: { id: string; type: "OptIn" | "OptOut" } | null;
  workspace: { id: string; name: string };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class Deliverer {
  constructor(private o: DelivererOptions) {}

  /**
   * Reserves `n` messages of `rate`/s on the shared pacing row `key` and waits for the slot: every
   * worker reserves on the same row, so the rate holds across all of them.
   */
  private async pace(workspaceId: string, key: string, n: number, rate: number) {
    const ms = Math.ceil((n * 1000) / rate);
    const { rows } = await this.o.pool.query<{ wait: number }>(
      `INSERT INTO send_pacing (workspace_id, key, paced_until) VALUES ($1, $2, now() + $3 * interval '1 millisecond')
       ON CONFLICT (workspace_id, key) DO UPDATE SET paced_until = GREATEST(send_pacing.paced_until, now()) + $3 * interval '1 millisecond'
       RETURNING GREATEST(0, extract(epoch FROM (paced_until - $3 * interval '1 millisecond' - now())) * 1000)::float8 AS wait`,
      [workspaceId, key, ms],
    );
    const wait = rows[0]?.wait ?? 0;
    if (wait > 0) await sleep(wait);
  }

  /** What every chunk of a broadcast needs, read once per few seconds rather than per chunk. */
  private contexts = new Map<string, { at: number; value: Promise<ChunkContext> }>();

  private context(b: BroadcastToSend): Promise<ChunkContext> {
    const cached = this.contexts.get(b.id);
    if (cached && Date.now() - cached.at < 5000) return cached.value;
    const value = this.loadContext(b);
    this.contexts.set(b.id, { at: Date.now(), value });
    if (this.contexts.size > 1000) this.contexts.delete(this.contexts.keys().next().value!);
    return value;
  }

  private async loadContext(b: BroadcastToSend): Promise<ChunkContext> {
    const workspaceId = b.workspace_id;
    let provider: ProviderForSending | null = null;
    let providerError: string | null = null;
    try {
      provider = await providerForSending(this.o.prisma, this.o.box, workspaceId, b.template.type);
    } catch (err) {
      providerError = `the ${b.template.type} provider cannot be used: ${err instanceof Error ? err.message : String(err)}`;
    }
    const [group, workspace] = await Promise.all([
      b.subscription_group_id
        ? this.o.prisma.subscriptionGroup.findUnique({ where: { workspaceId_id: { workspaceId, id: b.subscription_group_id } } })
        : null,
      this.o.prisma.workspace.findUniqueOrThrow({ where: { id: workspaceId }, select: { id: true, name: true } }),
    ]);
    return { provider, providerError, group: group ? { id: group.id, type: group.type } : null, workspace };
  }

  /** Sends up to `limit` due deliveries of the broadcast; returns how many it claimed (0: none due). */
  async deliverBroadcastChunk(b: BroadcastToSend, limit: number): Promise<number> {
    const workspaceId = b.workspace_id;
    const { provider, providerError, group, workspace } = await this.context(b);
    const rate = Math.min(b.rate_limit_per_second ?? Infinity, (provider && PROVIDER_RATE[provider.type]) ?? Infinity);
    const n = Number.isFinite(rate) ? Math.max(1, Math.min(limit, Math.floor(rate / 4) || 1)) : limit;
    const trait = contactTrait(b.template.type, provider?.type ?? null);
    const {
      picked,
      skipped,
      toSend: claimed,
    } = await claimBroadcastDeliveries(this.o.pool, {
      workspaceId,
      broadcastId: b.id,
      limit: n,
      leaseSeconds: this.o.leaseSeconds,
      contactTrait: trait,
      subscriptionGroup: group,
    });
    if (skipped > 0) this.o.metrics.deliveries.inc({ channel: b.template.type, status: "Skipped" }, skipped);
    if (claimed.length === 0) return picked;
    if (b.rate_limit_per_second) await this.pace(workspaceId, `broadcast:${b.id}`, claimed.length, b.rate_limit_per_second);
    if (provider && PROVIDER_RATE[provider.type])
      await this.pace(workspaceId, `provider:${provider.id}`, claimed.length, PROVIDER_RATE[provider.type]!);

    const ctx: RenderContext = {
      workspace,
      publicUrl: this.o.publicUrl,
      secretKey: this.o.secretKey,
      subscriptionGroupId: b.subscription_group_id,
    };
    const marks: Marked[] = [];
    const outgoing: { msg: OutgoingMessage; mark: Marked }[] = [];
    await Promise.all(
      claimed.map(async (c) => {
        const contact = trait ? String(c.traits[trait]) : null;
        if (providerError) {
          marks.push({ id: c.id, attempts: c.attempts, outcome: { status: "failed", reason: providerError } });
          return;
        }
        const scope = scopeFor(ctx, c.userId, c.traits);
        const r = await renderFor(b.template, scope, this.o.renderEmail);
        if (!r.ok) {
          marks.push({ id: c.id, attempts: c.attempts, outcome: { status: "failed", reason: r.reason }, contact });
          return;
        }
        // Email within a subscription group carries the one-click unsubscribe link.
        const unsubscribe = b.template.type === "Email" && b.subscription_group_id ? scope.unsubscribe_url : undefined;
        const mark: Marked = { id: c.id, attempts: c.attempts, outcome: { status: "sent" }, contact, rendered: r.rendered };
        marks.push(mark);
        outgoing.push({ msg: toOutgoing(workspaceId, c, r.rendered, contact, unsubscribe), mark });
      }),
    );
    if (outgoing.length > 0) {
      // Webhooks are built in (a provider row only adds the signing secret); other channels
      // without a provider use the embedded default, Log.
      const type = provider?.type ?? (b.template.type === "Webhook" ? "Webhook" : "Log");
      const sender = this.o.senders[type];
      const started = performance.now();
      let outcomes: SendOutcome[];
      try {
        outcomes = await sender.send(
          outgoing.map((o) => o.msg),
          provider?.config ?? {},
        );
      } catch (err) {
        outcomes = outgoing.map(() => ({ status: "retry", reason: `sender error: ${err instanceof Error ? err.message : String(err)}` }));
      }
      this.o.metrics.providerSeconds.observe({ provider: type }, (performance.now() - started) / 1000);
      outgoing.forEach((o, i) => {
        o.mark.outcome = outcomes[i] ?? { status: "retry", reason: "no outcome from the sender" };
      });
    }
    await markDeliveries(this.o.pool, workspaceId, marks);
    for (const m of marks) {
      this.o.metrics.deliveries.inc({
        channel: b.template.type,
        status: m.outcome.status === "sent" ? "Sent" : m.outcome.status === "failed" ? "Failed" : "Retry",
      });
    }
    return picked;
  }
}
