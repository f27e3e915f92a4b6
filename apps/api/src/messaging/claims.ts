// The delivery pipeline (PRODUCT §5 Deliveries): claim due rows, render, call the provider, mark.
//
// A row is claimed (Sending, due_at = claim time) in the statement that also decides skips
// (unsubscribed, not subscribed, no contact point, user gone), so every skip is a set-based
// decision recorded with its reason. Claimed rows are rendered and sent, then marked in one
// statement (marks.ts): Sent, Failed (permanent, with the reason), or back to Queued with a backoff for a
// transient failure. While the provider works, the sender renews the claim's lease, so a slow
// provider never makes a row look abandoned. A worker that dies between the provider's accept and
// the mark leaves the row Sending and stops renewing it; after the lease it is claimed again and
// sent once more with the same id (the idempotency key providers see): at most one resend. The
// attempt a claim counts names that claim: a renewal or a mark of an earlier claim finds the row at
// a later attempt and leaves it alone (marks.ts), and its sender stops sending it (lease.ts).
import type { Channel } from "@tidings/schema";
import type pg from "pg";
import { ident, type Param, param, sql } from "../db/sql.ts";
import type { MessageInput } from "../templates/index.ts";
import type { OutgoingMessage } from "./channels/types.ts";
import type { StreamRef } from "./sources.ts";
import { addTallies } from "./tallies.ts";

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
  channel: Channel;
  templateId: string | null;
  subscriptionGroupId: string | null;
  /** What the source adds to the Liquid scope (a journey run's `event`). */
  context: Record<string, unknown> | null;
  traits: Record<string, unknown>;
  /** The category delivery policies see. */
  category: string | null;
  createdAt: number;
  /** It was Deferred by a delivery policy until now (its release). */
  wasDeferred: boolean;
  /** `skip`: a policy's hold skips it whatever the rule says (a journey node's `whenHeld`). */
  holdAction: string | null;
  /** The zone the delivery policies used (set when they looked at it), recorded with the outcome. */
  timezone?: string;
  timezoneSource?: string;
}

export interface ClaimSpec {
  workspaceId: string;
  stream: StreamRef;
  limit: number;
  /** Seconds without renewal after which a Sending row is considered abandoned (its sender is gone). */
  leaseSeconds: number;
  /** The trait holding each channel's contact point (channels without one are absent). */
  contactTraits: Partial<Record<Channel, string>>;
}

/**
 * Claims up to `limit` due deliveries of a stream — expired leases first, then deferred messages
 * whose time came, then queued ones — recording skips (user gone, unsubscribed, not subscribed, no
 * contact point; for a released message also a journey run that left by its exit segment) in the
 * same statement; returns how many it took and the rows to send. A released message is checked
 * again here: what held it may have changed.
 */
export async function claimDeliveries(
  db: Pick<pg.Pool, "query">,
  spec: ClaimSpec,
): Promise<{ picked: number; skipped: Channel[]; toSend: Claimed[]; ids: string[] }> {
  const { rows } = await db.query<ClaimRow>(claimStatement(spec));
  const toSend = rows.filter((r) => !r.skipped).map(toClaimed);
  return { picked: rows.length, skipped: rows.filter((r) => r.skipped).map((r) => r.channel), toSend, ids: rows.map((r) => r.id) };
}

/**
 * A claim's skips, and the Deferred rows it takes, tallied (tallies.ts); a Queued or Sending row
 * claimed changes no count.
 */
const claimTallies = addTallies(
  sql`SELECT workspace_id, broadcast_id, CASE WHEN was_deferred THEN 'Deferred' ELSE 'Sending' END AS old_status, new_status FROM claimed`,
);

/** The claim's statement (`claimDeliveries`). */
function claimStatement(spec: ClaimSpec) {
  const column = ident(spec.stream.column);
  const [ws, stream, limit, traits] = [
    param(spec.workspaceId),
    param(spec.stream.id),
    param(spec.limit),
    param(JSON.stringify(spec.contactTraits)),
  ];
  const skip = skipReason(traits);
  return (
    // Three index-ordered scans (Sending rows whose lease ran out, taken first; due Deferred rows;
    // due Queued rows) read, and lock, only as far as \`picked\` takes rows, so a claim reads only
    // the rows it takes, however many are waiting. Every LIMIT is the constant \`limit\`: a LIMIT
    // the planner cannot see (a subquery) is guessed at a tenth of the table. The lookups are
    // LATERAL (index probes per row, never a hash of the whole table) and the update finds its
    // rows by the ctid they were locked at, by nothing else (marks.ts): nothing it reads grows.
    sql`WITH expired AS (
       SELECT d.ctid AS tid, d.workspace_id, d.id, d.user_id, d.channel, d.subscription_group_id, d.run_id, false AS was_deferred FROM deliveries d
       WHERE d.workspace_id = ${ws} AND d.${column} = ${stream} AND d.status = 'Sending'
         AND d.due_at < now() - ${spec.leaseSeconds} * interval '1 second'
       ORDER BY d.due_at LIMIT ${limit}
       FOR UPDATE OF d SKIP LOCKED),
     released AS (
       SELECT d.ctid AS tid, d.workspace_id, d.id, d.user_id, d.channel, d.subscription_group_id, d.run_id, true AS was_deferred FROM deliveries d
       WHERE d.workspace_id = ${ws} AND d.${column} = ${stream} AND d.status = 'Deferred' AND d.due_at <= now()
       ORDER BY d.due_at LIMIT ${limit}
       FOR UPDATE OF d SKIP LOCKED),
     queued AS (
       SELECT d.ctid AS tid, d.workspace_id, d.id, d.user_id, d.channel, d.subscription_group_id, d.run_id, false AS was_deferred FROM deliveries d
       WHERE d.workspace_id = ${ws} AND d.${column} = ${stream} AND d.status = 'Queued' AND d.due_at <= now()
       ORDER BY d.due_at LIMIT ${limit}
       FOR UPDATE OF d SKIP LOCKED),
     picked AS (SELECT * FROM expired UNION ALL SELECT * FROM released UNION ALL SELECT * FROM queued LIMIT ${limit}),
     decided AS (
       SELECT picked.tid, picked.id, picked.was_deferred, p.traits, ${skip} AS skip
       FROM picked
       LEFT JOIN LATERAL (SELECT profile_id, traits FROM profiles
         WHERE workspace_id = picked.workspace_id AND profile_id = picked.user_id LIMIT 1) p ON true
       LEFT JOIN LATERAL (SELECT type FROM subscription_groups
         WHERE workspace_id = picked.workspace_id AND id = picked.subscription_group_id LIMIT 1) g ON true
       LEFT JOIN LATERAL (SELECT subscribed FROM subscription_assignments
         WHERE workspace_id = picked.workspace_id AND subscription_group_id = picked.subscription_group_id AND profile_id = picked.user_id LIMIT 1) s ON true
       LEFT JOIN LATERAL (SELECT status FROM journey_runs
         WHERE picked.was_deferred AND workspace_id = picked.workspace_id AND id = picked.run_id LIMIT 1) r ON true),
     claimed AS (
       UPDATE deliveries d SET
         status = CASE WHEN decided.skip IS NULL THEN 'Sending' ELSE 'Skipped' END::"DeliveryStatus",
         reason = decided.skip,
         attempts = d.attempts + CASE WHEN decided.skip IS NULL THEN 1 ELSE 0 END,
         due_at = now(), updated_at = now()
       FROM decided WHERE d.ctid = decided.tid
       RETURNING d.id, d.user_id, d.attempts, d.channel, d.template_id, d.subscription_group_id, d.context, decided.traits,
         decided.skip IS NOT NULL AS skipped, d.category, (extract(epoch FROM d.created_at) * 1000)::float8 AS created_ms, decided.was_deferred,
         d.hold_action, d.workspace_id, d.broadcast_id, d.status::text AS new_status),
     tallied AS (${claimTallies})
     SELECT * FROM claimed`
  );
}

/** Why a picked delivery is skipped (user gone, unsubscribed, not subscribed, no contact point), or NULL. */
const skipReason = (traits: Param) => sql`CASE
      WHEN p.profile_id IS NULL THEN 'user no longer exists'
      WHEN g.type = 'OptOut' AND s.subscribed = false THEN 'unsubscribed'
      WHEN g.type = 'OptIn' AND s.subscribed IS NOT TRUE THEN 'not subscribed'
      WHEN r.status = 'Converted' THEN 'the user left the journey by its exit segment while the message was held'
      WHEN ${traits}::jsonb ->> picked.channel::text IS NOT NULL
        AND coalesce(p.traits ->> (${traits}::jsonb ->> picked.channel::text), '') = '' THEN 'no ' || (${traits}::jsonb ->> picked.channel::text) || ' trait'
    END`;

const toClaimed = (r: ClaimRow): Claimed => ({
  id: r.id,
  userId: r.user_id,
  attempts: r.attempts,
  channel: r.channel,
  templateId: r.template_id,
  subscriptionGroupId: r.subscription_group_id,
  context: r.context,
  traits: r.traits ?? {},
  category: r.category,
  createdAt: r.created_ms,
  wasDeferred: r.was_deferred,
  holdAction: r.hold_action,
});

/** The columns a claim returns (RETURNING above). */
interface ClaimRow {
  id: string;
  user_id: string;
  attempts: number;
  channel: Channel;
  template_id: string | null;
  subscription_group_id: string | null;
  context: Record<string, unknown> | null;
  traits: Record<string, unknown> | null;
  skipped: boolean;
  category: string | null;
  created_ms: number;
  was_deferred: boolean;
  hold_action: string | null;
}

/**
 * The next instant a stream has something to send: its earliest Queued row, a Deferred row's
 * notBefore, or a Sending row's lease end (null: nothing pending). Three index-backed minimums.
 */
export async function nextDue(db: Pick<pg.Pool, "query">, workspaceId: string, stream: StreamRef, leaseSeconds: number) {
  const column = ident(stream.column);
  const [ws, id] = [param(workspaceId), param(stream.id)];
  const { rows } = await db.query<{ next: Date | null }>(
    sql`SELECT least(
       (SELECT min(due_at) FROM deliveries WHERE workspace_id = ${ws} AND ${column} = ${id} AND status = 'Queued'),
       (SELECT min(due_at) FROM deliveries WHERE workspace_id = ${ws} AND ${column} = ${id} AND status = 'Deferred'),
       (SELECT min(due_at) FROM deliveries WHERE workspace_id = ${ws} AND ${column} = ${id} AND status = 'Sending') + ${leaseSeconds} * interval '1 second'
     ) AS next`,
  );
  return rows[0]?.next ?? null;
}

/** How many Queued or Deferred rows (up to `limit`) fall due within a second of `at`. */
export async function dueAround(db: Pick<pg.Pool, "query">, workspaceId: string, stream: StreamRef, at: Date, limit: number) {
  const column = ident(stream.column);
  const { rows } = await db.query<{ n: number }>(
    sql`SELECT count(*)::int AS n FROM (
       SELECT 1 FROM deliveries WHERE workspace_id = ${workspaceId} AND ${column} = ${stream.id} AND status IN ('Queued', 'Deferred')
         AND due_at <= ${at.toISOString()}::timestamptz + interval '1 second' LIMIT ${limit}) d`,
  );
  return rows[0]?.n ?? 0;
}

/** One claimed row's render inputs (render-worker.ts builds the Liquid scope from them). */
export function messageInput(workspace: { id: string; name: string }, c: Claimed): MessageInput {
  return {
    user: { ...c.traits, id: c.userId },
    ...(c.context?.event ? { event: c.context.event as Record<string, unknown> } : {}),
    workspace,
    unsubscribe: { workspaceId: workspace.id, userId: c.userId, subscriptionGroupId: c.subscriptionGroupId ?? undefined },
  };
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
