// The gate between a claim and the provider: in the claim's transaction, it takes each claimed
// user's lock (so two processes never decide the same user's sends at once), reads the sends each
// frequency cap counts (Sent, and Sending rows other chunks already decided), decides (decide.ts)
// and records every held or skipped message with its reason and notBefore, and every message's
// zone. Exact under concurrency: a user's next decision waits for this one's commit and sees it.
import { remember } from "../lib/remember.ts";
import { type Channel, type Policies, TRANSACTIONAL } from "@tidings/schema";
import type pg from "pg";
import { join, param, raw, sql } from "../db/sql.ts";
import { type Candidate, type CountedSends, type Decision, decide, type HoldRule, scopes } from "./decide.ts";
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

/** A user's zone, and what is recorded of it on their deliveries. */
interface ZoneUsed {
  zone: UserZone;
  recorded: { timezone: string; timezoneSource: string };
}

/** Two-key advisory lock space of the users' decisions (the second key is hashtext(workspace:user)). */
export const USER_LOCK_SPACE = 0x74647063; // "tdpc"

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
  // Users share a few zones: each trait value is looked at once, its zone and record shared.
  const byTrait = new Map<unknown, ZoneUsed>();
  const zones = new Map<string, ZoneUsed>(
    rows.map((r) => [
      r.userId,
      remember(byTrait, r.traits.timezone, () => {
        const zone = userZone(r.traits, p.defaultTimezone);
        return { zone, recorded: zoneOf(zone) };
      }),
    ]),
  );
  const candidates: Candidate[] = rows
    .map((r) => ({
      id: r.id,
      userId: r.userId,
      channel: r.channel,
      category: r.category,
      createdAt: r.createdAt,
      zone: zones.get(r.userId)!.zone.zone,
      skipWhenHeld: r.holdAction === "skip",
    }))
    .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const counted: CountedSends = p.frequencyCaps.length > 0 ? await countSends(db, workspaceId, p, candidates, nowMs) : new Map();
  const decisions = decide(p, candidates, counted, nowMs);
  await record(db, workspaceId, rows, decisions, zones);

  const result: GateResult = { send: new Map(), deferred: [], released: [], skipped: [] };
  for (const r of rows) {
    const d = decisions.get(r.id)!;
    if (d.kind === "send") {
      result.send.set(r.id, zones.get(r.userId)!.recorded);
      if (r.wasDeferred) result.released.push(r.channel);
    } else if (d.kind === "defer") result.deferred.push({ channel: r.channel, rule: d.rule });
    else result.skipped.push({ channel: r.channel, rule: d.rule });
  }
  return result;
}

/**
 * One user of a chunk and, per cap, where the cap's window starts for them: an index (1-based) into
 * the chunk's distinct window starts (a few: one per cap and zone), or null where no message of
 * theirs here is in the cap's scope.
 */
export interface UserCaps {
  user: string;
  since: (number | null)[];
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
  const caps = p.frequencyCaps;
  // Where each cap's window starts, per zone (the same for every user of the zone at this instant),
  // as 1-based indexes into `starts`.
  const starts: number[] = [];
  const startsByZone = new Map<string, number[]>();
  const scopeOf = scopes(p);
  const scoped = new Map<string, { since: (number | null)[]; here: number[] }>();
  for (const c of candidates) {
    const inScope = scopeOf(c).caps;
    if (inScope.length === 0) continue;
    const zoneStarts = remember(startsByZone, c.zone, () => caps.map((cap) => starts.push(capWindowStart(nowMs, c.zone, cap.window))));
    const u = remember(scoped, c.userId, () => ({ since: caps.map(() => null), here: caps.map(() => 0) }));
    for (const { i } of inScope) {
      u.since[i] = zoneStarts[i]!;
      u.here[i]!++;
    }
  }
  const counted: CountedSends = new Map();
  if (scoped.size === 0) return counted;
  const all = [...scoped].map(([user, u]) => ({ user, since: u.since }));
  const { rows } = await db.query<{ user_id: string; [cap: `v${number}`]: number }>(countedSends(workspaceId, p, starts, all, "count"));
  const columns = caps.map((_, i) => `v${i}` as const);
  const near: UserCaps[] = [];
  for (const r of rows) {
    const u = scoped.get(r.user_id)!;
    counted.set(
      r.user_id,
      u.since.map((s, i) => (s === null ? undefined : { n: r[columns[i]!]!, newest: [] })),
    );
    const reach = u.since.map((s, i) => (s !== null && r[columns[i]!]! + u.here[i]! >= caps[i]!.limit ? s : null));
    if (reach.some((s) => s !== null)) near.push({ user: r.user_id, since: reach });
  }
  if (near.length === 0) return counted;
  const { rows: times } = await db.query<{ user_id: string; [cap: `v${number}`]: number[] | null }>(
    countedSends(workspaceId, p, starts, near, "newest"),
  );
  for (const r of times) {
    const mine = counted.get(r.user_id)!;
    columns.forEach((column, i) => {
      if (mine[i] && r[column]) mine[i].newest = r[column];
    });
  }
  return counted;
}

/**
 * Per user, and per cap where `since` is set, the counted sends in the cap's window: how many
 * (`count`), or their times, newest first and at most the limit (`newest`), as columns v0, v1, …
 * Read by one index probe per user (deliveries by workspace and user), whatever the statistics
 * say, aggregated in the probe (no join, no sort across the chunk). The probe is fenced (OFFSET 0:
 * not pulled up into a join that could scan the workspace), and the status is compared as text
 * so an index leading with the status is never taken for it: on statistics a burst of sends has
 * made stale, one was, reading every Sent row of the workspace per chunk. This chunk's own rows,
 * made Sending by this transaction, are the row versions it wrote (xmin is its id) and are left out.
 */
export function countedSends(workspaceId: string, p: Policies, starts: number[], users: UserCaps[], what: "count" | "newest") {
  const caps = p.frequencyCaps;
  const used = users.flatMap((u) => u.since.filter((s): s is number => s !== null));
  const earliest = new Date(Math.min(...used.map((s) => starts[s - 1]!))).toISOString();
  const startsAt = param(starts.map((ms) => new Date(ms).toISOString()));
  const columns = caps.map((cap, i) => {
    const scope = sql`s.at >= (${startsAt}::timestamptz[])[${raw(`u.s${i}`)}]
      AND ${cap.channel === undefined ? raw("true") : sql`s.channel = ${cap.channel}`}
      AND ${cap.category === undefined ? sql`s.category IS DISTINCT FROM ${TRANSACTIONAL}` : sql`s.category = ${cap.category}`}`;
    return what === "count"
      ? sql`count(*) FILTER (WHERE ${scope})::int AS ${raw(`v${i}`)}`
      : sql`(array_agg((extract(epoch FROM s.at) * 1000)::float8 ORDER BY s.at DESC) FILTER (WHERE ${scope}))[1:${cap.limit}::int] AS ${raw(`v${i}`)}`;
  });
  const sinces = caps.map((_, i) => sql`${users.map((u) => u.since[i])}::int[]`);
  return sql`SELECT u.id AS user_id, c.*
     FROM unnest(${users.map((u) => u.user)}::text[], ${join(sinces, ", ")}) AS u(id, ${raw(caps.map((_, i) => `s${i}`).join(", "))})
     CROSS JOIN LATERAL (
       SELECT ${join(columns, ", ")}
       FROM (
         SELECT d.channel::text AS channel, d.category, coalesce(d.sent_at, d.due_at) AS at
         FROM deliveries d
         WHERE d.workspace_id = ${workspaceId} AND d.user_id = u.id
           AND (d.status::text = 'Sent' OR (d.status::text = 'Sending' AND d.xmin <> pg_current_xact_id()::xid))
           AND coalesce(d.sent_at, d.due_at) >= ${earliest}::timestamptz
         OFFSET 0) s) c`;
}

/** The zone recorded on a delivery, and where it came from. */
const zoneOf = (z: UserZone) => ({ timezone: z.zone, timezoneSource: z.invalidTrait === undefined ? z.source : "invalid-trait" });

/** The held (Deferred until notBefore) and skipped rows, with their reasons and zones (the rest are recorded when marked). */
async function record(
  db: Pick<pg.PoolClient, "query">,
  workspaceId: string,
  rows: GateRow[],
  decisions: Map<string, Decision>,
  zones: Map<string, ZoneUsed>,
) {
  const marks = rows.flatMap((r) => {
    const d = decisions.get(r.id)!;
    if (d.kind === "send") return [];
    const { zone: z, recorded } = zones.get(r.userId)!;
    const note = z.invalidTrait === undefined ? "" : ` (the timezone trait ${JSON.stringify(z.invalidTrait)} is not a zone)`;
    const { timezone, timezoneSource } = recorded;
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
