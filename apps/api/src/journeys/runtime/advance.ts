// Advancing runs: one transaction takes a batch of a journey's due runs (FOR UPDATE SKIP LOCKED,
// so any number of workers share the work), moves each through the nodes that decide at once
// (splits, cohorts, messages, delays already over) until it waits or ends, and writes the runs,
// their messages and the per-node counts back — all or nothing. A run is never advanced twice:
// its row stays locked until the commit that records where it went.
// New runs are moved the same way in the transaction that starts them (entries.ts).
import { EXIT_NODE_ID, type JourneyBodyNode, type JourneyDefinition } from "@tidings/schema";
import type pg from "pg";
import { param, sql } from "../../db/sql.ts";
import { inTransaction } from "../../db/transaction.ts";
import { membersNow } from "../../segments/index.ts";
import { queueJourneyMessages, wakeJourneySenders } from "../delivery-source.ts";
import type { SendJobs } from "../../messaging/index.ts";
import { type Outcome, type RunState, runNode, type StepContext } from "./nodes.ts";

/** A running journey, as the runtime reads it. */
export interface LiveJourney {
  id: string;
  /** When the journey was created: with the id, names this journey (an id may be reused after a delete). */
  createdAt: Date;
  version: number;
  canRunMultiple: boolean;
  exitSegmentId: string | null;
  definition: JourneyDefinition;
  /** Marked failing (its retry is due): a success clears it. */
  failing?: boolean;
}

export interface AdvanceDeps {
  sends: SendJobs;
  /** The definition of a journey's version (immutable once written). */
  definition: (db: pg.PoolClient, workspaceId: string, journey: LiveJourney, version: number) => Promise<JourneyDefinition | null>;
  lateness: (seconds: number) => void;
  /** Whether the workspace's delivery policies may hold messages (a run then waits for its message). */
  holdsMessages: (db: pg.PoolClient, workspaceId: string) => Promise<boolean>;
}

interface RunRow {
  /** Where the row is (it stays there: the batch holds it locked until its commit). */
  tid: string;
  id: string;
  user_id: string;
  version: number;
  node_id: string;
  waiting: boolean;
  wait_until: Date | null;
  event: Record<string, unknown> | null;
}

export type Final = { run: RunState; status: "Active" | "Completed" | "Converted"; dueAt: Date | null };

/** Advances up to `limit` due runs of the journey at `now`; returns how many it took. */
export async function advanceBatch(
  db: pg.PoolClient,
  deps: AdvanceDeps,
  workspaceId: string,
  journey: LiveJourney,
  now: Date,
  limit: number,
): Promise<number> {
  const { taken, queued } = await inTransaction(db, async () => {
    const { rows } = await db.query<RunRow>(
      sql`SELECT ctid::text AS tid, id, user_id, version, node_id, waiting, wait_until, event FROM journey_runs
       WHERE workspace_id = ${workspaceId} AND journey_id = ${journey.id} AND status = 'Active' AND due_at <= ${now}
       ORDER BY due_at LIMIT ${limit} FOR UPDATE SKIP LOCKED`,
    );
    if (rows.length === 0) return { taken: 0, queued: false };
    const ctx = await stepContext(db, deps, workspaceId, journey.id, now);
    const runs = rows.map(
      (r): RunState => ({
        id: r.id,
        userId: r.user_id,
        version: r.version,
        nodeId: r.node_id,
        waiting: r.waiting,
        waitUntil: r.wait_until,
        event: r.event,
      }),
    );
    const tids = new Map(rows.map((r) => [r.id, r.tid]));
    await record(ctx, deps, await decide(ctx, deps, journey, runs), (finals) => moveRuns(db, finals, tids, now));
    return { taken: rows.length, queued: ctx.messages.length > 0 };
  });
  if (queued) await wakeJourneySenders(deps.sends, workspaceId, journey.id);
  return taken;
}

/** How many runs arrived at each node (journey_node_counts), by version and node. */
type Reached = Map<string, { version: number; nodeId: string; n: number }>;

/** Where a batch's runs went: each run's final state, and the arrivals at each node. */
export interface Decided {
  finals: Final[];
  reached: Reached;
}

/** The context of one batch of runs, in `db`'s transaction. */
export async function stepContext(
  db: pg.PoolClient,
  deps: AdvanceDeps,
  workspaceId: string,
  journeyId: string,
  now: Date,
): Promise<StepContext> {
  return {
    db,
    workspaceId,
    journeyId,
    now,
    messages: [],
    lateness: deps.lateness,
    holdsMessages: await deps.holdsMessages(db, workspaceId),
  };
}

/**
 * Moves runs as far as the nodes that decide at once take them: a member of the exit segment's run
 * ends first, wherever it is; the others go node by node until each waits or ends. Messages are
 * gathered in `ctx.messages`.
 */
export async function decide(ctx: StepContext, deps: AdvanceDeps, journey: LiveJourney, runs: RunState[]): Promise<Decided> {
  const finals: Final[] = [];
  const converted = journey.exitSegmentId
    ? await membersNow(ctx.db, ctx.workspaceId, journey.exitSegmentId, [...new Set(runs.map((r) => r.userId))], ctx.now)
    : new Set<string>();
  const moving: RunState[] = [];
  for (const r of runs) {
    if (converted.has(r.userId)) finals.push({ run: r, status: "Converted", dueAt: null });
    else moving.push(r);
  }
  const reached: Reached = new Map();
  await step(ctx, deps, journey, moving, finals, reached);
  return { finals, reached };
}

/** Moves runs node by node until each waits or ends (definitions have no cycles). */
async function step(ctx: StepContext, deps: AdvanceDeps, journey: LiveJourney, runs: RunState[], finals: Final[], reached: Reached) {
  let pending = runs;
  for (let hop = 0; pending.length > 0; hop++) {
    const groups = new Map<string, RunState[]>();
    for (const r of pending) {
      const k = `${r.version}\u0000${r.nodeId}`;
      const g = groups.get(k);
      if (g) g.push(r);
      else groups.set(k, [r]);
    }
    const next: RunState[] = [];
    for (const group of groups.values()) {
      const { version, nodeId } = group[0]!;
      for (const r of group) {
        if (r.waiting) continue;
        const k = `${version}\u0000${nodeId}`;
        const c = reached.get(k) ?? { version, nodeId, n: 0 };
        c.n++;
        reached.set(k, c);
      }
      const definition = await deps.definition(ctx.db, ctx.workspaceId, journey, version);
      const node = definition && nodeId !== EXIT_NODE_ID ? definition.nodes.find((n) => n.id === nodeId) : undefined;
      // A definition's depth bounds the hops; past it (never, for a valid definition) the run ends.
      const outcomes: Outcome[] =
        node && hop <= (definition?.nodes.length ?? 0)
          ? await runNode(ctx, node as JourneyBodyNode, group)
          : group.map(() => ({ end: "Completed" }));
      group.forEach((r, i) => {
        const o = outcomes[i]!;
        if ("next" in o) next.push({ ...r, nodeId: o.next, waiting: false, waitUntil: null });
        else if ("wait" in o) finals.push({ run: { ...r, waiting: true, waitUntil: o.wait }, status: "Active", dueAt: o.wait });
        else finals.push({ run: r, status: o.end, dueAt: null });
      });
    }
    pending = next;
  }
}

/**
 * Writes where a batch's runs went (`writeRuns`: the runs' rows), their messages and the per-node
 * counts, in the batch's transaction.
 */
export async function record(
  ctx: StepContext,
  deps: AdvanceDeps,
  { finals, reached }: Decided,
  writeRuns: (finals: Final[]) => Promise<unknown>,
) {
  const { db, workspaceId, journeyId } = ctx;
  await writeRuns(finals);
  if (ctx.messages.length > 0) {
    await db.query(queueJourneyMessages(deps.sends, workspaceId, journeyId, ctx.messages));
  }
  if (reached.size > 0) {
    const counts = [...reached.values()];
    await db.query(
      sql`INSERT INTO journey_node_counts (workspace_id, journey_id, version, node_id, reached)
       SELECT ${workspaceId}, ${journeyId}, u.version, u.node_id, u.n
       FROM unnest(${counts.map((c) => c.version)}::int[], ${counts.map((c) => c.nodeId)}::text[], ${counts.map((c) => c.n)}::int8[]) AS u(version, node_id, n)
       ON CONFLICT (workspace_id, journey_id, version, node_id) DO UPDATE SET reached = journey_node_counts.reached + EXCLUDED.reached`,
    );
  }
}

/**
 * Where each run of a batch went, in one statement for the batch: each run is updated where the
 * batch's select found it (`tids`: its ctid by id; the batch holds it locked, so it is still there).
 */
export async function moveRuns(db: Pick<pg.PoolClient, "query">, finals: Final[], tids: Map<string, string>, now: Date) {
  const at = param(now);
  const where = finals.map((f) => tids.get(f.run.id) ?? null);
  // By a TID scan of the list. The batch's select has just read every page it names (in shared
  // buffers): fetching one costs what a page of a sequential scan does, not a random read from disk
  // (the default 4), which made a scan of the whole table look cheaper up to ~250 000 runs: 680 ms
  // a batch of 1 000 at 100 000 runs (a new server's first timers; growing with the table).
  // No workspace condition: the ctids are of the batch's select, which named it, and each row's
  // id (the server's uuid) is checked (without statistics, a workspace is estimated to match a
  // two-hundredth of the table: a scan of it looked cheaper still). The setting lasts to the commit.
  await db.query(sql`SET LOCAL random_page_cost = 1`);
  await db.query(
    sql`UPDATE journey_runs r SET node_id = u.node_id, waiting = u.waiting, wait_until = u.wait_until, due_at = u.due_at,
       status = u.status::"JourneyRunStatus", ended_at = CASE WHEN u.status = 'Active' THEN NULL ELSE ${at}::timestamptz END, updated_at = ${at}
     FROM unnest(${where}::tid[], ${finals.map((f) => f.run.id)}::uuid[], ${finals.map((f) => f.run.nodeId)}::text[],
         ${finals.map((f) => f.run.waiting)}::bool[], ${finals.map((f) => f.run.waitUntil)}::timestamptz[],
         ${finals.map((f) => f.dueAt)}::timestamptz[], ${finals.map((f) => f.status)}::text[])
       AS u(tid, id, node_id, waiting, wait_until, due_at, status)
     WHERE r.ctid = ANY(${where}::tid[]) AND r.ctid = u.tid AND r.id = u.id`,
  );
}
