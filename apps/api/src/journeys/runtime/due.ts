// When runs fall due: the statements that find a workspace's next due run and the workspaces with
// work, both by each running journey's first run on the timer index (partial, Active runs by
// journey and due_at), read in its order and stopped at the first entry.
import { type Param, param, type Sql, sql } from "../../db/sql.ts";

/**
 * The first due run of journey `j` (an alias of journeys), for a LATERAL join. Ordered by the
 * index, it reads one live entry whatever the table's statistics say; an EXISTS of due runs was
 * planned as a scan of journey_runs once they were estimated to match many rows (statistics taken
 * while runs were due): 16–38 ms a call at 300 000–500 000 runs (bench:journeys), every second.
 */
const firstDue = sql`CROSS JOIN LATERAL (SELECT r.due_at FROM journey_runs r WHERE r.workspace_id = j.workspace_id AND r.journey_id = j.id
    AND r.status = 'Active' AND r.due_at IS NOT NULL ORDER BY r.due_at LIMIT 1) r`;

/** Running journeys not set aside (a failing one's retry due at `at`), alias j. */
const advancing = (at: Param) => sql`j.status = 'Running' AND (j.evaluation_retry_at IS NULL OR j.evaluation_retry_at <= ${at})`;

/** When the workspace's next run of a running journey falls due (column `at`, NULL: none). */
export const nextDueQuery = (workspaceId: string, now: Date): Sql =>
  sql`SELECT min(r.due_at) AS at FROM journeys j ${firstDue} WHERE j.workspace_id = ${workspaceId} AND ${advancing(param(now))}`;

/** The workspaces with signals or with runs due by `horizon` (column workspace_id). */
export const dueWorkspacesQuery = (horizon: Date): Sql => {
  const at = param(horizon);
  return sql`SELECT DISTINCT workspace_id FROM journey_signals
    UNION
    SELECT j.workspace_id FROM journeys j ${firstDue} WHERE ${advancing(at)} AND r.due_at <= ${at}`;
};
