// The gate between a claim and the provider: in the claim's transaction, it takes each claimed
// user's lock (so two processes never decide the same user's sends at once), reads the sends each
// frequency cap counts (Sent, and Sending rows other chunks already decided), decides (decide.ts)
// and records every held or skipped message with its reason and notBefore, and every message's
// zone. Exact under concurrency: a user's next decision waits for this one's commit and sees it.
import { remember } from "../lib/remember.ts";
import type { Channel, Policies } from "@tidings/schema";
import type pg from "pg";
import { type Sql, sql } from "../db/sql.ts";
import { type Candidate, type Counted, countKey, type Decision, decide, type HoldRule, inScope } from "./decide.ts";
import { capWindowStart, type UserZone, userZone } from "./zones.ts";

/** A claimed message as the gate needs it. */
export interface GateRow {
  id: string;
  userId: string;
  channel: Channel;
  category: string | null;
  createdAt: number;
  traits: Record<string, unknown>;
  /** It was Deferred until now (a release, when it goes). */
  wasDeferred: boolean;
  /** `skip`: a hold skips it whatever the rule's action. */
  holdAction: string | null;
}

export interface GateResult {
  /** The ids that go now, with the zone the rules used (recorded when they are marked). */
  send: Map<string, { timezone: string; timezoneSource: string }>;
  /** Counts for the metrics: held (by reason kind), released, skipped (expired or a skip rule). */
  deferred: { channel: Channel; rule: HoldRule }[];
  released: Channel[];
  skipped: { channel: Channel; rule: HoldRule }[];
}

/** Two-key advisory lock space of the users' decisions (the second key is hashtext(workspace:user)). */
const USER_LOCK_SPACE = 0x74647063; // "tdpc"

/**
 * Decides the claimed rows of one workspace; `db` is the claim's transaction (the rows are
 * Sending and locked in it). Rows held or skipped leave Sending here (their attempt undone).
 */
export async function gate(
  db: Pick<pg.PoolClient, "query">,
  workspaceId: string,
  p: Policies,
  rows: GateRow[],
  nowMs: number,
): Promise<GateResult> {
  const zones = new Map<string, UserZone>(rows.map((r) => [r.userId, userZone(r.traits, p.defaultTimezone)]));
  const candidates: Candidate[] = rows
    .map((r) => ({
      id: r.id,
      userId: r.userId,
      channel: r.channel,
      category: r.category,
      createdAt: r.createdAt,
      zone: zones.get(r.userId)!.zone,
      skipWhenHeld: r.holdAction === "skip",
    }))
    .sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
  const counted = p.frequencyCaps.length > 0 ? await countSends(db, workspaceId, p, candidates, nowMs) : new Map<string, Counted>();
  const decisions = decide(p, candidates, counted, nowMs);
  await record(db, workspaceId, rows, decisions, zones);

  const result: GateResult = { send: new Map(), deferred: [], released: [], skipped: [] };
  for (const r of rows) {
    const d = decisions.get(r.id)!;
    if (d.kind === "send") {
      result.send.set(r.id, zoneOf(zones.get(r.userId)!));
      if (r.wasDeferred) result.released.push(r.channel);
    } else if (d.kind === "defer") result.deferred.push({ channel: r.channel, rule: d.rule });
    else result.skipped.push({ channel: r.channel, rule: d.rule });
  }
  return result;
}

/** One user's pair with one cap in scope, and where the cap's window starts for them. */
export interface Pair {
  user: string;
  cap: number;
  since: number;
}

/**
 * Locks the chunk's users (in one order everywhere: no deadlock), then counts, per user and cap in
 * scope, the counted sends in the cap's window. Only where the chunk could reach a cap (its count
 * plus the user's messages here) are the sends' times read, newest first and at most the limit.
 */
async function countSends(db: Pick<pg.PoolClient, "query">, workspaceId: string, p: Policies, candidates: Candidate[], nowMs: number) {
  const users = [...new Set(candidates.map((c) => c.userId))].sort();
  await db.query(
    sql`SELECT pg_advisory_xact_lock(${USER_LOCK_SPACE}, hashtext(${workspaceId} || ':' || u.id))
     FROM (SELECT id FROM unnest(${users}::text[]) AS id ORDER BY id) u`,
  );
  const pairs = new Map<string, Pair & { here: number }>();
  // Where each cap's window starts, per zone (the same for every user of the zone at this instant).
  const starts = new Map<string, number>();
  const since = (cap: number, zone: string) =>
    remember(starts, `${cap}\u0000${zone}`, () => capWindowStart(nowMs, zone, p.frequencyCaps[cap]!.window));
  for (const c of candidates) {
    p.frequencyCaps.forEach((cap, i) => {
      if (!inScope(cap, c)) return;
      const pair = remember(pairs, countKey(c.userId, i), () => ({ user: c.userId, cap: i, since: since(i, c.zone), here: 0 }));
      pair.here++;
    });
  }
  const counted = new Map<string, Counted>();
  if (pairs.size === 0) return counted;
  const { rows } = await db.query<{ user_id: string; cap: number; n: number }>(
    countedSends(workspaceId, p, [...pairs.values()], sql`count(*)::int AS n`),
  );
  for (const r of rows) counted.set(countKey(r.user_id, r.cap), { n: r.n, newest: [] });
  const near = [...pairs.values()].filter((x) => (counted.get(countKey(x.user, x.cap))?.n ?? 0) + x.here >= p.frequencyCaps[x.cap]!.limit);
  if (near.length === 0) return counted;
  const { rows: times } = await db.query<{ user_id: string; cap: number; times: number[] }>(
    countedSends(workspaceId, p, near, sql`(array_agg((extract(epoch FROM s.at) * 1000)::float8 ORDER BY s.at DESC))[1:c.lim] AS times`),
  );
  for (const r of times) counted.get(countKey(r.user_id, r.cap))!.newest = r.times;
  return counted;
}

/**
 * Per pair, `aggregate` over the user's counted sends in the cap's window: read by one index probe
 * per user (deliveries by workspace and user), whatever the statistics say. The probe is fenced
 * (OFFSET 0: not pulled up into a join that could scan the workspace), and the status is compared
 * as text so an index leading with the status is never taken for it: on statistics a burst of
 * sends has made stale, one was, reading every Sent row of the workspace per chunk. This chunk's
 * own rows, made Sending by this transaction, are the row versions it wrote (xmin is its id) and
 * are left out.
 */
export function countedSends(workspaceId: string, p: Policies, list: Pair[], aggregate: Sql) {
  const caps = p.frequencyCaps;
  const earliest = new Date(Math.min(...list.map((x) => x.since))).toISOString();
  return sql`WITH sent AS (
       SELECT u.id AS user_id, s.channel, s.category, s.at
       FROM unnest(${[...new Set(list.map((x) => x.user))]}::text[]) AS u(id)
       CROSS JOIN LATERAL (
         SELECT d.channel::text AS channel, d.category, coalesce(d.sent_at, d.due_at) AS at
         FROM deliveries d
         WHERE d.workspace_id = ${workspaceId} AND d.user_id = u.id
           AND (d.status::text = 'Sent' OR (d.status::text = 'Sending' AND d.xmin <> pg_current_xact_id()::xid))
           AND coalesce(d.sent_at, d.due_at) >= ${earliest}::timestamptz
         OFFSET 0) s)
     SELECT c.user_id, c.cap, ${aggregate}
     FROM unnest(${list.map((x) => x.user)}::text[], ${list.map((x) => x.cap)}::int[], ${list.map((x) => new Date(x.since).toISOString())}::timestamptz[],
       ${list.map((x) => caps[x.cap]!.channel ?? null)}::text[], ${list.map((x) => caps[x.cap]!.category ?? null)}::text[],
       ${list.map((x) => caps[x.cap]!.limit)}::int[]) AS c(user_id, cap, since, channel, category, lim)
     JOIN sent s ON s.user_id = c.user_id AND s.at >= c.since
       AND (c.channel IS NULL OR s.channel = c.channel)
       AND CASE WHEN c.category IS NULL THEN s.category IS DISTINCT FROM 'transactional' ELSE s.category = c.category END
     GROUP BY c.user_id, c.cap, c.lim`;
}

/** The zone recorded on a delivery, and where it came from. */
const zoneOf = (z: UserZone) => ({ timezone: z.zone, timezoneSource: z.invalidTrait === undefined ? z.source : "invalid-trait" });

/** The held (Deferred until notBefore) and skipped rows, with their reasons and zones (the rest are recorded when marked). */
async function record(
  db: Pick<pg.PoolClient, "query">,
  workspaceId: string,
  rows: GateRow[],
  decisions: Map<string, Decision>,
  zones: Map<string, UserZone>,
) {
  const marks = rows.flatMap((r) => {
    const d = decisions.get(r.id)!;
    if (d.kind === "send") return [];
    const z = zones.get(r.userId)!;
    const note = z.invalidTrait === undefined ? "" : ` (the timezone trait ${JSON.stringify(z.invalidTrait)} is not a zone)`;
    const { timezone, timezoneSource } = zoneOf(z);
    return [
      {
        id: r.id,
        status: d.kind === "defer" ? "Deferred" : "Skipped",
        reason: `${d.reason}${note}`,
        due: d.kind === "defer" ? new Date(d.notBefore).toISOString() : null,
        zone: timezone,
        source: timezoneSource,
      },
    ];
  });
  if (marks.length === 0) return;
  // Out of Sending: the claim's attempt is undone.
  await db.query(
    sql`UPDATE deliveries d SET timezone = m.zone, timezone_source = m.source, status = m.status::"DeliveryStatus", reason = m.reason,
       due_at = coalesce(m.due, d.due_at), attempts = d.attempts - 1, updated_at = now()
     FROM jsonb_to_recordset(${JSON.stringify(marks)}::jsonb) AS m(id uuid, status text, reason text, due timestamptz, zone text, source text)
     WHERE d.workspace_id = ${workspaceId} AND d.id = m.id`,
  );
}
