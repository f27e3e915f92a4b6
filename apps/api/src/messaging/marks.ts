// Marks: each claimed delivery's outcome, recorded in one statement per chunk (claims.ts claims
// them): Sent, Failed (permanent, or a transient failure past MAX_ATTEMPTS), or back to Queued
// with a backoff for a transient failure. And the claim's lease, renewed while the provider works.
// Both find their rows the same way (`sendingRows`), in the same order (by id): a renewal under
// way when the mark begins never deadlocks with it. Both touch a row only while it is still this
// claim's: Sending, at the attempt the claim counted. A row whose lease ran out and that another
// sender claimed since is at the next attempt, and is that sender's to renew and to mark.
import type pg from "pg";
import { type Sql, sql } from "../db/sql.ts";
import type { SendOutcome } from "./channels/types.ts";
import type { Claimed } from "./claims.ts";
import { backoffMs } from "../lib/time.ts";
import { addTallies } from "./tallies.ts";

/** A transient failure is retried this many times in all before it is recorded as Failed. */
export const MAX_ATTEMPTS = 5;
/** Before a transient failure's next attempt: 1 s doubling to a minute. */
const retryDelayMs = (attempt: number) => backoffMs(attempt - 1, 1000, 60_000);

export interface Marked {
  id: string;
  outcome: SendOutcome;
  contact?: string | null;
  rendered?: unknown;
  attempts: number;
  timezone?: string;
  timezoneSource?: string;
}

/** What every mark of a claimed row carries (its outcome is added): the zone the policies used is recorded with it. */
export const markOf = (c: Claimed) => ({ id: c.id, attempts: c.attempts, timezone: c.timezone, timezoneSource: c.timezoneSource });

/** Records each claimed delivery's outcome in one statement. */
export async function markDeliveries(db: Pick<pg.Pool, "query">, workspaceId: string, marks: Marked[]) {
  if (marks.length === 0) return;
  const now = Date.now();
  // One shape for every row (no spreads), built once per mark.
  const rows = marks.map((m) => {
    const o = m.outcome;
    let status = "Sent";
    let reason: string | null = null;
    let providerId: string | null = null;
    let due: string | null = null;
    if (o.status === "sent") providerId = o.providerMessageId ?? null;
    else if (o.status === "failed" || m.attempts >= MAX_ATTEMPTS) {
      status = "Failed";
      reason = o.status === "retry" ? `gave up after ${m.attempts} attempts: ${o.reason}` : o.reason;
    } else {
      status = "Queued";
      reason = o.reason;
      due = new Date(now + Math.max(o.retryAfterMs ?? 0, retryDelayMs(m.attempts))).toISOString();
    }
    return {
      id: m.id,
      attempts: m.attempts,
      status,
      reason,
      provider_id: providerId,
      contact: m.contact ?? null,
      rendered: m.rendered ?? null,
      due,
      sent: o.status === "sent",
      zone: m.timezone ?? null,
      zone_source: m.timezoneSource ?? null,
    };
  });
  rows.sort(byId);
  await db.query(markStatement(workspaceId, rows));
}

const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * Extends the lease of deliveries still being sent (`rows`: each claimed row's id and attempt):
 * their sender is alive, however slow the provider. Returns the ids it renewed; a row missing from
 * them is no longer this claim's (marked, or claimed by another sender after the lease ran out).
 */
export async function renewLeases(db: Pick<pg.Pool, "query">, workspaceId: string, rows: { id: string; attempts: number }[]) {
  if (rows.length === 0) return [];
  const sorted = JSON.stringify(rows.map(({ id, attempts }) => ({ id, attempts })).sort(byId));
  const { rows: renewed } = await db.query<{ id: string }>(
    sql`WITH target AS (${sendingRows(workspaceId, sql`SELECT * FROM jsonb_to_recordset(${sorted}::jsonb) AS m(id uuid, attempts int)`)})
     UPDATE deliveries d SET due_at = now() FROM target WHERE d.ctid = target.tid RETURNING d.id`,
  );
  return renewed.map((r) => r.id);
}

/**
 * The rows of `source` (a query with columns `id` and `attempts`) still Sending at that attempt
 * (still this claim's), each found by a primary-key probe and locked where it is, in the source's
 * order: their ctid is `tid`. Joined to the rows by id instead, an update was planned on the
 * table's statistics: with none yet (autovacuum had not analyzed the table), a scan of all the
 * workspace's rows for those Sending looked cheap, and a mark of 1 400 rows took 480 ms instead of
 * 120 (bench:journeys, the first journey). A row source of JSON is estimated at 100 rows whatever
 * its size, so the probes are planned as probes.
 */
const sendingRows = (workspaceId: string, source: Sql) => sql`SELECT m.*, x.tid FROM (${source}) m CROSS JOIN LATERAL (
         SELECT d.ctid AS tid FROM deliveries d WHERE d.workspace_id = ${workspaceId} AND d.id = m.id AND d.status = 'Sending' AND d.attempts = m.attempts
         FOR UPDATE OF d) x`;

/**
 * The mark's statement, for rows built by `markDeliveries`: one JSON document (serialized
 * natively, parsed by PostgreSQL) rather than per-column arrays, each row updated by the ctid
 * `sendingRows` found it at, as a claim's is, and its outcomes tallied (tallies.ts).
 */
function markStatement(workspaceId: string, rows: unknown[]) {
  return sql`WITH m AS (${sendingRows(
    workspaceId,
    sql`SELECT * FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
         AS m(id uuid, attempts int, status text, reason text, provider_id text, contact text, rendered jsonb, due timestamptz, sent boolean,
           zone text, zone_source text)`,
  )})
     , marked AS (UPDATE deliveries d SET status = m.status::"DeliveryStatus", reason = m.reason, provider_message_id = m.provider_id,
       contact = m.contact, rendered = m.rendered, due_at = coalesce(m.due, d.due_at), updated_at = now(),
       sent_at = CASE WHEN m.sent THEN now() ELSE d.sent_at END,
       timezone = coalesce(m.zone, d.timezone), timezone_source = coalesce(m.zone_source, d.timezone_source)
     FROM m WHERE d.ctid = m.tid
     RETURNING d.workspace_id, d.broadcast_id, m.status AS new_status)
     ${addTallies(sql`SELECT workspace_id, broadcast_id, 'Sending' AS old_status, new_status FROM marked`)}`;
}
