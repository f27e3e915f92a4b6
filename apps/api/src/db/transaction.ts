// One transaction on one connection: COMMIT when the work returns, ROLLBACK when it throws.
import type pg from "pg";

export async function inTransaction<T>(client: Pick<pg.ClientBase, "query">, work: () => Promise<T>): Promise<T> {
  await client.query("BEGIN");
  try {
    const result = await work();
    await client.query("COMMIT");
    return result;
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {});
    throw err;
  }
}
