// What each node does to the runs arriving at it (or waking in it): one function per node kind,
// each deciding for a whole group of runs at once (set-based SQL where the data decides).
// A handler returns one outcome per run: go on to a child, wait until an instant, or end.
import { createHash } from "node:crypto";
import type { DelayVariant, JourneyBodyNode } from "@tidings/schema";
import type pg from "pg";
import { sql } from "../../db/sql.ts";
import { membersNow } from "../../segments/index.ts";

/** A run as the runtime holds it while advancing it. */
export interface RunState {
  id: string;
  userId: string;
  version: number;
  nodeId: string;
  /** Already arrived at nodeId and waiting there (a delay or a wait); false: arriving now. */
  waiting: boolean;
  waitUntil: Date | null;
  event: Record<string, unknown> | null;
}

export type Outcome = { next: string } | { wait: Date } | { end: "Completed" };

/** A message a run's message node queues (one per run and node). */
export interface QueuedMessage {
  run: RunState;
  node: Extract<JourneyBodyNode, { type: "MessageNode" }>;
}

export interface StepContext {
  db: pg.PoolClient;
  workspaceId: string;
  journeyId: string;
  now: Date;
  /** Messages the step queues, inserted with the runs' new state. */
  messages: QueuedMessage[];
  /**
   * The workspace's delivery policies may hold messages (caps or windows): a run waits at its
   * message node until the message is decided, rather than going on when it is queued.
   */
  holdsMessages: boolean;
  /** Called with how late (s) each timer fired. */
  lateness: (seconds: number) => void;
}

type Handler<T extends JourneyBodyNode["type"]> = (
  ctx: StepContext,
  node: Extract<JourneyBodyNode, { type: T }>,
  runs: RunState[],
) => Promise<Outcome[]>;

/** A waiting run whose instant has come goes on (its lateness is measured); others wait on. */
function timerOutcome(ctx: StepContext, run: RunState, then: string): Outcome {
  if (run.waitUntil && run.waitUntil.getTime() > ctx.now.getTime()) return { wait: run.waitUntil };
  if (run.waitUntil) ctx.lateness((ctx.now.getTime() - run.waitUntil.getTime()) / 1000);
  return { next: then };
}

/**
 * When each user's delay ends, computed in SQL from their traits: the next hour:minute of their
 * `timezone` (a tz database name, else UTC; local wall-clock arithmetic, so DST changes are
 * honoured), or the date in a trait plus an offset. Null: no valid date (go on at once).
 */
async function delayEnds(ctx: StepContext, variant: DelayVariant, runs: RunState[]): Promise<(Date | null)[]> {
  if (variant.type === "Second") return runs.map(() => new Date(ctx.now.getTime() + variant.seconds * 1000));
  const users = runs.map((r) => r.userId);
  const statement =
    variant.type === "LocalTime"
      ? sql`SELECT u.ord, (CASE WHEN c.at > n.local_now THEN c.at ELSE c.at + interval '1 day' END) AT TIME ZONE t.tz AS due
         FROM unnest(${users}::text[]) WITH ORDINALITY u(id, ord)
         LEFT JOIN profiles p ON p.workspace_id = ${ctx.workspaceId} AND p.profile_id = u.id
         LEFT JOIN (SELECT name FROM pg_timezone_names) z ON z.name = p.traits ->> 'timezone'
         CROSS JOIN LATERAL (SELECT coalesce(z.name, 'UTC') AS tz) t
         CROSS JOIN LATERAL (SELECT ${ctx.now}::timestamptz AT TIME ZONE t.tz AS local_now) n
         CROSS JOIN LATERAL (SELECT date_trunc('day', n.local_now) + make_interval(hours => ${variant.hour}::int, mins => ${variant.minute}::int) AS at) c`
      : sql`SELECT u.ord, tidings_instant(p.traits #> ${variant.userProperty.split(".")}::text[]) + ${variant.offsetSeconds}::float8 * interval '1 second' AS due
         FROM unnest(${users}::text[]) WITH ORDINALITY u(id, ord)
         LEFT JOIN profiles p ON p.workspace_id = ${ctx.workspaceId} AND p.profile_id = u.id`;
  const { rows } = await ctx.db.query<{ ord: string; due: Date | null }>(statement);
  const due = new Map(rows.map((r) => [Number(r.ord) - 1, r.due]));
  return runs.map((_, i) => due.get(i) ?? null);
}

const delay: Handler<"DelayNode"> = async (ctx, node, runs) => {
  const arriving = runs.filter((r) => !r.waiting);
  const ends = new Map<string, Date | null>();
  if (arriving.length > 0) {
    const computed = await delayEnds(ctx, node.variant, arriving);
    for (const [i, r] of arriving.entries()) ends.set(r.id, computed[i]!);
  }
  return runs.map((r) => {
    if (r.waiting) return timerOutcome(ctx, r, node.child);
    const end = ends.get(r.id);
    // A missing, invalid or past date goes on at once.
    return end && end.getTime() > ctx.now.getTime() ? { wait: end } : { next: node.child };
  });
};

const segmentSplit: Handler<"SegmentSplitNode"> = async (ctx, node, runs) => {
  const members = await membersNow(ctx.db, ctx.workspaceId, node.segment, userIds(runs), ctx.now);
  return runs.map((r) => ({ next: members.has(r.userId) ? node.trueChild : node.falseChild }));
};

const waitFor: Handler<"WaitForNode"> = async (ctx, node, runs) => {
  const memberships: Set<string>[] = [];
  for (const c of node.segmentChildren) memberships.push(await membersNow(ctx.db, ctx.workspaceId, c.segmentId, userIds(runs), ctx.now));
  return runs.map((r): Outcome => {
    const found = node.segmentChildren.findIndex((_, i) => memberships[i]!.has(r.userId));
    if (found >= 0) return { next: node.segmentChildren[found]!.child };
    if (!r.waiting) return { wait: new Date(ctx.now.getTime() + node.timeoutSeconds * 1000) };
    return timerOutcome(ctx, r, node.timeoutChild);
  });
};

/** How long a run waits for its message at most (longer than any policy's time-to-live). */
const MESSAGE_WAIT_MS = 31 * 86_400_000;

/**
 * Queues the message of each arriving run. Without holding policies the run goes on at once; with
 * them it waits until the message is Sent, Failed or Skipped (the delivery source makes it due
 * then: `wakeRunsOf`), so a deferred message keeps its run here.
 */
const message: Handler<"MessageNode"> = async (ctx, node, runs) => {
  for (const run of runs) if (!run.waiting) ctx.messages.push({ run, node });
  const waiting = runs.filter((r) => r.waiting).map((r) => r.id);
  const decided = new Set<string>();
  if (waiting.length > 0) {
    const { rows } = await ctx.db.query<{ run_id: string }>(
      sql`SELECT run_id FROM deliveries WHERE workspace_id = ${ctx.workspaceId} AND run_id = ANY(${waiting}::uuid[])
       AND node_id = ${node.id} AND status IN ('Sent', 'Failed', 'Skipped')`,
    );
    for (const r of rows) decided.add(r.run_id);
  }
  return runs.map((r): Outcome => {
    if (!r.waiting) return ctx.holdsMessages ? { wait: new Date(ctx.now.getTime() + MESSAGE_WAIT_MS) } : { next: node.child };
    // Decided, or the policies were lifted meanwhile, or the wait ran out: go on.
    if (decided.has(r.id) || !ctx.holdsMessages) return { next: node.child };
    return timerOutcome(ctx, r, node.child);
  });
};

/**
 * A stable position in [0, 100) for (journey, user): the same user takes the same branch on every
 * run and in every version whose percentages are the same.
 */
export function cohortPosition(journeyId: string, userId: string): number {
  const h = createHash("sha256").update(`${journeyId}\u0000${userId}`).digest();
  return (h.readUInt32BE(0) / 2 ** 32) * 100;
}

const randomCohort: Handler<"RandomCohortNode"> = async (ctx, node, runs) =>
  runs.map((r) => {
    const at = cohortPosition(ctx.journeyId, r.userId);
    let upTo = 0;
    for (const c of node.children) {
      upTo += c.percent;
      if (at < upTo) return { next: c.child };
    }
    return { next: node.children[node.children.length - 1]!.child };
  });

const userIds = (runs: RunState[]) => [...new Set(runs.map((r) => r.userId))];

const handlers: { [T in JourneyBodyNode["type"]]: Handler<T> } = {
  DelayNode: delay,
  SegmentSplitNode: segmentSplit,
  WaitForNode: waitFor,
  MessageNode: message,
  RandomCohortNode: randomCohort,
};

/** The outcomes of `node` for `runs` (all at that node). */
export function runNode(ctx: StepContext, node: JourneyBodyNode, runs: RunState[]): Promise<Outcome[]> {
  return (handlers[node.type] as Handler<typeof node.type>)(ctx, node as never, runs);
}
