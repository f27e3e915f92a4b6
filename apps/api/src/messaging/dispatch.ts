// The delivery pipeline (PRODUCT §5 Deliveries): claim due rows, render, call the provider, mark.
//
// A row is claimed (Sending, due_at = claim time) in the statement that also decides skips
// (unsubscribed, not subscribed, no contact point, user gone), so every skip is a set-based
// decision recorded with its reason. Claimed rows are rendered and sent, then marked in one
// statement: Sent, Failed (permanent, with the reason), or back to Queued with a backoff for a
// transient failure. A worker that dies between the provider's accept and the mark leaves the row
// Sending; after the lease it is claimed again and sent once more with the same id (the
// idempotency key providers see): at most one resend.
import type { MessageTemplateDefinition } from "@tidings/schema";
import type pg from "pg";
import { renderDefinition, type RenderScope } from "../templates/liquid.ts";
import type { OutgoingMessage, SendOutcome } from "./channels/types.ts";
import { signUnsubscribeToken, unsubscribeUrl } from "./unsubscribe-token.ts";

/** A transient failure is retried this many times in all before it is recorded as Failed. */
export const MAX_ATTEMPTS = 5;
const backoffMs = (attempt: number) => Math.min(60_000, 1000 * 2 ** (attempt - 1));

/** The trait holding each channel's contact point (by provider type for push). */
export function contactTrait(channel: string, providerType: string | null): string | null {
  if (channel === "Email") return "email";
  if (channel === "Sms") return "phone";
  if (channel === "MobilePush") return providerType === "Expo" ? "expoPushToken" : "deviceToken";
  return null;
}

export interface Claimed {
  id: string;
  userId: string;
  attempts: number;
  traits: Record<string, unknown>;
}

export interface ClaimSpec {
  workspaceId: string;
  broadcastId: string;
  limit: number;
  /** Seconds after which a Sending row is considered abandoned (its worker died). */
  leaseSeconds: number;
  contactTrait: string | null;
  subscriptionGroup: { id: string; type: "OptIn" | "OptOut" } | null;
}

/**
 * Claims up to `limit` due deliveries of a running broadcast, recording skips in the same
 * statement; returns how many it took and the rows to send.
 */
export async function claimBroadcastDeliveries(
  db: Pick<pg.Pool, "query">,
  spec: ClaimSpec,
): Promise<{ picked: number; skipped: number; toSend: Claimed[] }> {
  const skip = `CASE
      WHEN p.profile_id IS NULL THEN 'user no longer exists'
      WHEN $6::text = 'OptOut' AND s.subscribed = false THEN 'unsubscribed'
      WHEN $6::text = 'OptIn' AND s.subscribed IS NOT TRUE THEN 'not subscribed'
      WHEN $5::text IS NOT NULL AND coalesce(p.traits ->> $5::text, '') = '' THEN 'no ' || $5::text || ' trait'
    END`;
  const { rows } = await db.query<{ id: string; user_id: string; attempts: number; traits: Record<string, unknown>; skipped: boolean }>(
    // Two index-ordered scans (due Queued rows; Sending rows whose lease ran out, taken first),
    // so a claim reads only the rows it takes, however many are waiting.
    `WITH running AS (
       SELECT 1 FROM broadcasts b WHERE b.workspace_id = $1 AND b.id = $2 AND b.status IN ('Queued', 'Running')),
     expired AS (
       SELECT d.workspace_id, d.id, d.user_id FROM deliveries d
       WHERE d.workspace_id = $1 AND d.broadcast_id = $2 AND d.status = 'Sending'
         AND d.due_at < now() - $4 * interval '1 second' AND EXISTS (SELECT 1 FROM running)
       ORDER BY d.due_at LIMIT $3
       FOR UPDATE OF d SKIP LOCKED),
     queued AS (
       SELECT d.workspace_id, d.id, d.user_id FROM deliveries d
       WHERE d.workspace_id = $1 AND d.broadcast_id = $2 AND d.status = 'Queued' AND d.due_at <= now()
         AND EXISTS (SELECT 1 FROM running)
       ORDER BY d.due_at LIMIT (SELECT $3 - count(*) FROM expired)
       FOR UPDATE OF d SKIP LOCKED),
     picked AS (SELECT * FROM expired UNION ALL SELECT * FROM queued),
     decided AS (
       SELECT picked.id, p.traits, ${skip} AS skip
       FROM picked
       LEFT JOIN profiles p ON p.workspace_id = picked.workspace_id AND p.profile_id = picked.user_id
       LEFT JOIN subscription_assignments s ON s.workspace_id = picked.workspace_id
         AND s.subscription_group_id = $7::uuid AND s.profile_id = picked.user_id)
     UPDATE deliveries d SET
       status = CASE WHEN decided.skip IS NULL THEN 'Sending' ELSE 'Skipped' END::"DeliveryStatus",
       reason = decided.skip,
       attempts = d.attempts + CASE WHEN decided.skip IS NULL THEN 1 ELSE 0 END,
       due_at = now(), updated_at = now()
     FROM decided WHERE d.workspace_id = $1 AND d.id = decided.id
     RETURNING d.id, d.user_id, d.attempts, decided.traits, decided.skip IS NOT NULL AS skipped`,
    [
      spec.workspaceId,
      spec.broadcastId,
      spec.limit,
      spec.leaseSeconds,
      spec.contactTrait,
      spec.subscriptionGroup?.type ?? null,
      spec.subscriptionGroup?.id ?? null,
    ],
  );
  const toSend = rows.filter((r) => !r.skipped).map((r) => ({ id: r.id, userId: r.user_id, attempts: r.attempts, traits: r.traits ?? {} }));
  return { picked: rows.length, skipped: rows.length - toSend.length, toSend };
}

export interface Marked {
  id: string;
  outcome: SendOutcome;
  contact?: string | null;
  rendered?: unknown;
  attempts: number;
}

/** Records each claimed delivery's outcome in one statement. */
export async function markDeliveries(db: Pick<pg.Pool, "query">, workspaceId: string, marks: Marked[]) {
  if (marks.length === 0) return;
  const now = Date.now();
  const rows = marks.map((m) => {
    const o = m.outcome;
    const row = { id: m.id, contact: m.contact ?? null, rendered: m.rendered ?? null };
    if (o.status === "sent") return { ...row, status: "Sent", reason: null, provider_id: o.providerMessageId ?? null, due: null };
    if (o.status === "failed" || m.attempts >= MAX_ATTEMPTS) {
      const reason = o.status === "retry" ? `gave up after ${m.attempts} attempts: ${o.reason}` : o.reason;
      return { ...row, status: "Failed", reason, provider_id: null, due: null };
    }
    const due = new Date(now + Math.max(o.retryAfterMs ?? 0, backoffMs(m.attempts))).toISOString();
    return { ...row, status: "Queued", reason: o.reason, provider_id: null, due };
  });
  // One JSON document (serialized natively, parsed by PostgreSQL) rather than per-column arrays.
  await db.query(
    `UPDATE deliveries d SET status = m.status::"DeliveryStatus", reason = m.reason, provider_message_id = m.provider_id,
       contact = m.contact, rendered = m.rendered, due_at = coalesce(m.due, d.due_at), updated_at = now()
     FROM jsonb_to_recordset($2::jsonb)
       AS m(id uuid, status text, reason text, provider_id text, contact text, rendered jsonb, due timestamptz)
     WHERE d.workspace_id = $1 AND d.id = m.id AND d.status = 'Sending'`,
    [workspaceId, JSON.stringify(rows)],
  );
}

export interface RenderContext {
  workspace: { id: string; name: string };
  publicUrl: string;
  secretKey: string;
  subscriptionGroupId: string | null;
}

/** The Liquid scope of one recipient. */
export function scopeFor(ctx: RenderContext, userId: string, traits: Record<string, unknown>): RenderScope {
  let url: string | undefined;
  return {
    user: { ...traits, id: userId },
    workspace: ctx.workspace,
    // Signed only when a template or the Email headers use it (most messages never do).
    get unsubscribe_url() {
      url ??= unsubscribeUrl(
        ctx.publicUrl,
        signUnsubscribeToken(ctx.secretKey, {
          workspaceId: ctx.workspace.id,
          userId,
          subscriptionGroupId: ctx.subscriptionGroupId ?? undefined,
        }),
      );
      return url;
    },
  };
}

/** Renders one message; a Liquid error is a permanent failure of that delivery, never a crash. */
export async function renderFor(
  template: MessageTemplateDefinition,
  scope: RenderScope,
  renderEmail: (t: Extract<MessageTemplateDefinition, { type: "Email" }>, scope: RenderScope) => Promise<unknown>,
): Promise<{ ok: true; rendered: Record<string, unknown> } | { ok: false; reason: string }> {
  try {
    const rendered = template.type === "Email" ? await renderEmail(template, scope) : await renderDefinition(template, scope, "definition");
    return { ok: true, rendered: rendered as Record<string, unknown> };
  } catch (err) {
    return { ok: false, reason: `render error: ${err instanceof Error ? err.message : String(err)}` };
  }
}

/** Messages ready for the sender, and the outcomes already known (render errors). */
export function toOutgoing(
  workspaceId: string,
  claimed: Claimed,
  rendered: Record<string, unknown>,
  contact: string | null,
  unsubscribe: string | undefined,
): OutgoingMessage {
  const to = contact ?? String(rendered.url ?? "");
  return {
    deliveryId: claimed.id,
    workspaceId,
    userId: claimed.userId,
    to,
    rendered,
    ...(unsubscribe ? { unsubscribeUrl: unsubscribe } : {}),
  };
}
