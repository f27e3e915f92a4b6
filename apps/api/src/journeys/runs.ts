// The read side of the journey runtime: a journey's runs, a user's runs, and the stats.
import { EXIT_NODE_ID, type JourneyDefinition, type JourneyRun, type JourneyRunListQuery, type JourneyStats } from "@tidings/schema";
import type { PrismaClient } from "../db/client.ts";
import { empty, prismaRows, type Sql, sql } from "../db/sql.ts";
import type { JourneyRun as RunRow, Prisma } from "../generated/prisma/client.ts";
import { notFound } from "../lib/errors.ts";
import { decodeCursor, invalidCursor, page } from "../http/pagination.ts";
import { findJourney } from "./service.ts";

export function toJourneyRun(r: RunRow): JourneyRun {
  return {
    id: r.id,
    journeyId: r.journeyId,
    userId: r.userId,
    version: r.version,
    status: r.status,
    nodeId: r.nodeId,
    waitingUntil: r.status === "Active" && r.waiting && r.waitUntil ? r.waitUntil.getTime() : null,
    event: (r.event as Record<string, unknown> | null) ?? null,
    enteredAt: r.enteredAt.getTime(),
    updatedAt: r.updatedAt.getTime(),
    endedAt: r.endedAt?.getTime() ?? null,
  };
}

/** A journey's runs, newest first (by entry time, then id), keyset-paginated. */
export async function listRuns(prisma: PrismaClient, workspaceId: string, journeyId: string, query: JourneyRunListQuery) {
  await findJourney(prisma, workspaceId, journeyId);
  const where: Prisma.JourneyRunWhereInput = { workspaceId, journeyId };
  if (query.userId) where.userId = query.userId;
  if (query.status) where.status = query.status;
  if (query.cursor) {
    const [ms, id] = decodeCursor(query.cursor, ["number", "string"]);
    if (!Number.isSafeInteger(ms) || !/^[0-9a-f-]{36}$/i.test(id)) throw invalidCursor();
    where.OR = [{ enteredAt: { lt: new Date(ms) } }, { enteredAt: new Date(ms), id: { lt: id } }];
  }
  const rows = await prisma.journeyRun.findMany({ where, orderBy: [{ enteredAt: "desc" }, { id: "desc" }], take: query.limit + 1 });
  const result = page(rows, query.limit, toJourneyRun, (r) => [r.enteredAt.getTime(), r.id]);
  return { ...result, runs: result.items };
}

/** A user's runs of every journey, newest first (up to 50). */
export async function userRuns(prisma: PrismaClient, workspaceId: string, userId: string) {
  const rows = await prisma.journeyRun.findMany({
    where: { workspaceId, userId },
    orderBy: [{ enteredAt: "desc" }, { id: "desc" }],
    take: 50,
    include: { journey: { select: { name: true } } },
  });
  return rows.map((r) => ({ ...toJourneyRun(r), journeyName: r.journey.name }));
}

const RUN_COUNTS = sql`count(*)::int AS entered,
  count(*) FILTER (WHERE status = 'Active')::int AS active,
  count(*) FILTER (WHERE status = 'Completed')::int AS completed,
  count(*) FILTER (WHERE status = 'Converted')::int AS converted`;

interface NodeCount {
  node_id: string;
  n: number;
}

interface Counts {
  entered: number;
  active: number;
  completed: number;
  converted: number;
}

/** Run counts, overall and per node, of every version or of one. */
export async function journeyStats(prisma: PrismaClient, workspaceId: string, journeyId: string, version?: number): Promise<JourneyStats> {
  const journey = await findJourney(prisma, workspaceId, journeyId);
  const only = version === undefined ? empty : sql`AND version = ${version}`;
  const ws = sql`workspace_id = ${workspaceId}::uuid AND journey_id = ${journeyId}::uuid`;
  let definition = journey.definition as JourneyDefinition | null;
  if (version !== undefined) {
    const v = await prisma.journeyVersion.findUnique({ where: { workspaceId_journeyId_version: { workspaceId, journeyId, version } } });
    if (!v) throw notFound(`Version ${version} of journey ${journeyId}`);
    definition = v.definition as JourneyDefinition;
  }
  // One statement, so one snapshot for every count: read apart, a run moving on between two reads
  // would show at both nodes, or at neither.
  const rows = (query: Sql) => sql`(SELECT coalesce(json_agg(r), '[]'::json) FROM (${query}) r)`;
  const [read] = await prismaRows<{
    totals: Counts[];
    perVersion: (Counts & { version: number })[];
    waiting: NodeCount[];
    reached: NodeCount[];
    messages: (NodeCount & { status: string })[];
  }>(
    prisma,
    sql`SELECT
      ${rows(sql`SELECT ${RUN_COUNTS} FROM journey_runs WHERE ${ws} ${only}`)} AS totals,
      ${rows(sql`SELECT version, ${RUN_COUNTS} FROM journey_runs WHERE ${ws} GROUP BY version`)} AS "perVersion",
      ${rows(sql`SELECT node_id, count(*)::int AS n FROM journey_runs WHERE ${ws} ${only} AND status = 'Active' GROUP BY node_id`)} AS waiting,
      ${rows(sql`SELECT node_id, sum(reached)::int AS n FROM journey_node_counts WHERE ${ws} ${only} GROUP BY node_id`)} AS reached,
      ${rows(sql`SELECT d.node_id, d.status::text AS status, count(*)::int AS n FROM deliveries d
        WHERE d.workspace_id = ${workspaceId}::uuid AND d.journey_id = ${journeyId}::uuid
          ${version === undefined ? empty : sql`AND d.run_id IN (SELECT id FROM journey_runs WHERE ${ws} AND version = ${version})`}
        GROUP BY d.node_id, d.status`)} AS messages`,
  );
  const { totals, waiting, reached, messages } = read!;
  const perVersion = read!.perVersion.sort((x, y) => x.version - y.version);
  const byNode = (rows: NodeCount[]) => new Map(rows.map((r) => [r.node_id, r.n]));
  const [waitingAt, reachedAt] = [byNode(waiting), byNode(reached)];
  const sent = (nodeId: string, ...statuses: string[]) =>
    messages.filter((m) => m.node_id === nodeId && statuses.includes(m.status)).reduce((a, m) => a + m.n, 0);
  const nodes = [...(definition?.nodes ?? []), { id: EXIT_NODE_ID, type: "ExitNode" as const }].map((n) => ({
    id: n.id,
    type: n.type,
    waiting: waitingAt.get(n.id) ?? 0,
    reached: reachedAt.get(n.id) ?? 0,
    ...(n.type === "MessageNode"
      ? {
          sent: sent(n.id, "Sent"),
          skipped: sent(n.id, "Skipped"),
          failed: sent(n.id, "Failed"),
          queued: sent(n.id, "Queued", "Sending"),
          deferred: sent(n.id, "Deferred"),
        }
      : {}),
  }));
  return { journeyId, version: version ?? null, ...totals[0]!, nodes, versions: perVersion };
}
