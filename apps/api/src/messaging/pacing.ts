// Pacing shared by every worker process: a stream's rate limit and a provider's rate are rows of
// send_pacing, on which each sender reserves its chunk's messages before it sends them.
import type pg from "pg";
import { param, sql } from "../db/sql.ts";
import { sleep } from "../lib/time.ts";

/**
 * Reserves `n` messages of `rate`/s on the pacing row `key` and waits for their turn: every worker
 * reserves on the same row, so the rate holds across all of them (a cell-rate algorithm: after a
 * quiet spell, `burst` messages may go at once, then the pace holds).
 */
export async function reserve(pool: Pick<pg.Pool, "query">, workspaceId: string, key: string, n: number, rate: number, burst = 1) {
  const ms = param(Math.ceil((n * 1000) / rate));
  const tolerance = param(Math.floor(((burst - 1) * 1000) / rate));
  const { rows } = await pool.query<{ wait: number }>(
    sql`INSERT INTO send_pacing (workspace_id, key, paced_until) VALUES (${workspaceId}, ${key}, now() + ${ms} * interval '1 millisecond')
     ON CONFLICT (workspace_id, key) DO UPDATE SET paced_until = GREATEST(send_pacing.paced_until, now()) + ${ms} * interval '1 millisecond'
     RETURNING GREATEST(0, extract(epoch FROM (paced_until - (${ms} + ${tolerance}) * interval '1 millisecond' - now())) * 1000)::float8 AS wait`,
  );
  const wait = rows[0]?.wait ?? 0;
  if (wait > 0) await sleep(wait);
}
