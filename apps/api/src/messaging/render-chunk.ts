// Renders a claimed chunk (send-chunk.ts): each row's provider, contact and template, rendered in
// the render threads a batch per template; a row that cannot go gets its failure as its mark.
import type { Channel, MessageTemplateDefinition } from "@tidings/schema";
import { sql } from "../db/sql.ts";
import type { OutgoingMessage } from "./channels/types.ts";
import { type Claimed, contactTrait, messageInput, toOutgoing } from "./claims.ts";
import { type Marked, markOf } from "./marks.ts";
import { type ProviderForSending, ProviderUnusableError, providerForSending } from "./providers/service.ts";
import { ReadCache } from "./read-cache.ts";
import type pg from "pg";
import type { PrismaClient } from "../db/client.ts";
import type { JobLog } from "../jobs/index.ts";
import type { SecretBox } from "../lib/secrets.ts";
import type { RenderPool } from "../templates/index.ts";
import type { StreamSettings } from "./sources.ts";

const CHANNELS: Channel[] = ["Email", "Sms", "MobilePush", "Webhook"];

/** One channel's share of a chunk: what goes to its provider, and every row's mark. */
export interface RenderedChannel {
  channel: Channel;
  provider: ProviderForSending | null;
  outgoing: { msg: OutgoingMessage; mark: Marked }[];
  marks: Marked[];
}

/** A workspace's provider for a channel, or why it cannot be used. */
interface ChannelContext {
  provider: ProviderForSending | null;
  providerError: string | null;
}

export class ChunkRenderer {
  /** What is read once per few seconds rather than per chunk. */
  private channels = new ReadCache<ChannelContext>(5000);
  private workspaces = new ReadCache<{ id: string; name: string }>(5000);

  constructor(private o: { pool: pg.Pool; prisma: PrismaClient; box: SecretBox; renders: RenderPool; log: JobLog }) {}

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
  async contactTraits(workspaceId: string, settings: StreamSettings) {
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

  /** Renders the claimed rows, channel by channel; a row that cannot go has its failure marked. */
  async render(workspaceId: string, claimed: Claimed[], settings: StreamSettings): Promise<RenderedChannel[]> {
    const [workspace, templates] = await Promise.all([
      this.workspace(workspaceId),
      settings.template ? new Map<string, MessageTemplateDefinition>() : this.templates(workspaceId, claimed),
    ]);
    const out: RenderedChannel[] = [];
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
      const done: RenderedChannel = { channel, provider, outgoing: [], marks: [] };
      const fail = (c: Claimed, reason: string) =>
        done.marks.push({ ...markOf(c), outcome: { status: "failed", reason }, contact: contactOf(c) });
      // Rendered in the render threads, a batch per template.
      const byTemplate = new Map<MessageTemplateDefinition, Claimed[]>();
      for (const c of rows) {
        const template = settings.template ?? (c.templateId ? templates.get(c.templateId) : undefined);
        if (providerError) fail(c, providerError);
        else if (!template) fail(c, `template ${c.templateId ?? "(none)"} is missing or has no definition`);
        else {
          const group = byTemplate.get(template);
          if (group) group.push(c);
          else byTemplate.set(template, [c]);
        }
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
          done.marks.push(mark);
          done.outgoing.push({ msg: toOutgoing(workspaceId, c, r.rendered, contact, r.unsubscribeUrl), mark });
        });
      }
      out.push(done);
    }
    return out;
  }
}
