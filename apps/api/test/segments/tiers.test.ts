// A refresh drains the outbox for the segments reading events and for the others apart, at once
// (DrainTier in src/segments/engine/index.ts): a trait change arriving while the segments reading
// events are in a long pass is applied at once, not after that pass; each row is deleted once both
// tiers applied it.
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createWorkspace } from "../../src/auth/service.ts";
import { createDb, type Db } from "../../src/db/client.ts";
import { outboxKey } from "../../src/outbox/index.ts";
import { type DrainTier, SegmentEngine } from "../../src/segments/engine/index.ts";
import { createTestDatabase } from "../support/app.ts";
import { recordingJobs } from "./support.ts";

let db: Db;
let admin: pg.Client;
/** Holds a lock on `events` in its transaction: the tier reading events waits on it. */
let locker: pg.Client;

beforeAll(async () => {
  const url = await createTestDatabase();
  db = createDb(url, 4);
  admin = new pg.Client({ connectionString: url });
  await admin.connect();
  locker = new pg.Client({ connectionString: url });
  await locker.connect();
});
afterAll(async () => {
  await admin?.end();
  await locker?.end();
  await db?.close();
});

it("applies a trait change to the segments reading no events while those reading events are in a long pass", {
  timeout: 30_000,
}, async () => {
  const ws = (await createWorkspace(db.prisma, "drain-tiers")).workspace.id;
  const segment = async (name: string, entryNode: unknown, nodes: unknown[] = []) =>
    (
      await admin.query<{ id: string }>(
        "INSERT INTO segments (workspace_id, id, name, definition) VALUES ($1, gen_random_uuid(), $2, $3) RETURNING id",
        [ws, name, JSON.stringify({ entryNode, nodes })],
      )
    ).rows[0]!.id;
  const pro = await segment("pro", { type: "Trait", id: "p", path: "plan", operator: { type: "Equals", value: "pro" } });
  const bought = await segment("bought", { type: "Performed", id: "b", event: "Bought", times: 1, timesOperator: ">=" });
  // Reads events and the plan: Ann's change below concerns both tiers.
  const proBuyers = await segment("pro-buyers", { type: "And", id: "a", children: ["p", "b"] }, [
    { type: "Trait", id: "p", path: "plan", operator: { type: "Equals", value: "pro" } },
    { type: "Performed", id: "b", event: "Bought", times: 1, timesOperator: ">=" },
  ]);
  await admin.query(`INSERT INTO profiles (workspace_id, profile_id, traits) VALUES ($1, 'ann', '{"plan": "free"}'), ($1, 'bob', '{}')`, [
    ws,
  ]);
  const passes: DrainTier[] = [];
  const engine = new SegmentEngine({
    pool: db.pool,
    jobs: recordingJobs().jobs,
    clock: Date.now,
    onDrain: (_rows, _users, tier) => passes.push(tier),
  });
  await engine.refresh(ws);
  const members = async (segmentId: string) =>
    (
      await admin.query<{ profile_id: string }>(
        "SELECT profile_id FROM segment_memberships WHERE workspace_id = $1 AND segment_id = $2 ORDER BY 1",
        [ws, segmentId],
      )
    ).rows.map((r) => r.profile_id);
  const change = (id: string, key: string) =>
    admin.query("INSERT INTO segment_outbox (workspace_id, ids, keys) VALUES ($1, $2, $3)", [ws, [id], [key]]);

  // Bob buys; the segments reading events cannot read it until the lock goes.
  await admin.query(
    `INSERT INTO events (workspace_id, message_id, type, identity_id, user_id, event, event_time, received_at, payload)
     VALUES ($1, 'buy-1', 'track', 'bob', 'bob', 'Bought', now(), now(), '{}')`,
    [ws],
  );
  await change("bob", outboxKey.event("Bought"));
  await locker.query("BEGIN");
  await locker.query("LOCK TABLE events IN ACCESS EXCLUSIVE MODE");
  let refreshed: Promise<boolean> | undefined;
  try {
    const began = Date.now();
    refreshed = engine.refresh(ws);
    // Ann turns pro while that pass waits: her segment takes it without waiting for the pass.
    await expect.poll(() => passes.includes("profiles"), { timeout: 5_000 }).toBe(true);
    await admin.query(`UPDATE profiles SET traits = '{"plan": "pro"}' WHERE workspace_id = $1 AND profile_id = 'ann'`, [ws]);
    await change("ann", outboxKey.trait("plan"));
    await expect.poll(() => members(pro), { timeout: 5_000, interval: 50 }).toEqual(["ann"]);
    expect(passes).not.toContain("events");
    expect(await members(bought)).toEqual([]);
    // Neither row is deleted yet: the tier reading events has not applied them.
    const { rows } = await admin.query("SELECT count(*)::int AS n FROM segment_outbox WHERE workspace_id = $1", [ws]);
    expect(rows[0].n).toBe(2);
    // The pass reading events is let run past the second for which a refresh takes what arrives
    // meanwhile (PASSES_MS): it ends the refresh once done.
    await new Promise((r) => setTimeout(r, Math.max(0, began + 1_200 - Date.now())));
  } finally {
    await locker.query("ROLLBACK");
  }
  await refreshed;
  expect(await members(bought)).toEqual(["bob"]);
  expect(await members(pro)).toEqual(["ann"]);
  // Bob's row is gone; Ann's arrived after the pass reading events had begun, which ended the
  // refresh: the next one applies it to those segments and deletes it.
  const left = async () =>
    (await admin.query<{ ids: string[] }>("SELECT ids FROM segment_outbox WHERE workspace_id = $1", [ws])).rows.map((r) => r.ids);
  expect(await left()).toEqual([["ann"]]);
  const before = passes.length;
  const resolving = await statementsWhile(/LEFT JOIN profile_aliases a ON a\.workspace_id = \$1 AND a\.alias_id = x/, () =>
    engine.refresh(ws),
  );
  expect(await left()).toEqual([]);
  // The tier reading no events remembers it applied that row: only the other reads it again, and
  // takes the row's ids as that tier resolved them, without resolving them again.
  expect(passes.slice(before)).toEqual(["events"]);
  expect(resolving).toBe(0);
  expect(await members(pro)).toEqual(["ann"]);
  expect(await members(proBuyers)).toEqual([]);
});

/** How many statements matching `text` any connection sent while `fn` ran. */
async function statementsWhile(text: RegExp, fn: () => Promise<unknown>): Promise<number> {
  const query = pg.Client.prototype.query;
  let n = 0;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const statement = args[0];
    const sqlText = typeof statement === "string" ? statement : (statement as { text?: string } | undefined)?.text;
    if (sqlText && text.test(sqlText)) n++;
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  try {
    await fn();
  } finally {
    pg.Client.prototype.query = query;
  }
  return n;
}
