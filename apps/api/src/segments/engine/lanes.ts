// Work spread over several connections at once.
import type pg from "pg";

/**
 * Runs `fn` over `items` on `lanes` connections at once: `db` and connections of `pool`
 * (statements on different segments touch different rows, so they never wait for one another).
 */
export async function inLanes<T>(
  pool: pg.Pool,
  db: pg.PoolClient,
  lanes: number,
  items: T[],
  fn: (lane: pg.PoolClient, item: T) => Promise<unknown>,
): Promise<void> {
  const connecting = items.length > 1 ? await Promise.allSettled(Array.from({ length: lanes - 1 }, () => pool.connect())) : [];
  const extra = connecting.flatMap((c) => (c.status === "fulfilled" ? [c.value] : []));
  const refused = connecting.find((c) => c.status === "rejected");
  if (refused) {
    for (const c of extra) c.release();
    throw refused.reason;
  }
  // The first failure stops every lane before any connection goes back to the pool: a lane
  // still running would issue statements on a connection someone else may hold by then.
  let next = 0;
  let failed = false;
  const outcomes = await Promise.allSettled(
    [db, ...extra].map(async (lane) => {
      try {
        while (!failed && next < items.length) await fn(lane, items[next++]!);
      } catch (err) {
        failed = true;
        throw err;
      }
    }),
  );
  // A lane that failed drops its connection (it may be broken); the others go back to the pool.
  for (const [i, c] of extra.entries()) c.release(outcomes[i + 1]!.status === "rejected");
  const failure = outcomes.find((o) => o.status === "rejected");
  if (failure) throw failure.reason;
}
