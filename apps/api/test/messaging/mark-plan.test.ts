// A chunk's claim, its lease's renewal and its mark find their rows by primary key and update them by ctid, whatever
// the table's statistics say. With none yet (a new server's first journey: autovacuum analyzes a
// table only at its next round after enough changes), the mark joined to its rows by id was
// planned as a scan of all of the workspace's rows for those Sending: 480 ms a mark of 1 400 rows
// instead of 120, growing with the workspace (bench:journeys, its first round).
import { randomUUID } from "node:crypto";
import type pg from "pg";
import { describe, expect, it } from "vitest";
import { createWorkspace } from "../../src/auth/service.ts";
import type { Sql } from "../../src/db/sql.ts";
import { claimDeliveries } from "../../src/messaging/claims.ts";
import { markDeliveries, renewLeases } from "../../src/messaging/marks.ts";
import { testDatabase } from "../segments/support.ts";
import { scansOf } from "../support/plans.ts";

const t = testDatabase();

/** The statement a function sends, caught rather than run (to be explained). */
async function statementOf(send: (db: Pick<pg.Pool, "query">) => Promise<unknown>): Promise<Sql> {
  let caught: Sql | undefined;
  await send({
    query: (async (q: Sql) => {
      caught = q;
      return { rows: [] };
    }) as unknown as pg.Pool["query"],
  });
  return caught!;
}

/** How the plan reads `deliveries`: node type and index of every scan of it. */
const deliveryScans = (q: Sql) => scansOf(t.admin, q, "deliveries");

/**
 * Each row found by a primary-key probe (an index scan, or a bitmap scan of the key, which the
 * planner picks alike once autovacuum has analyzed the table mid-test) and updated by its ctid.
 */
const probesByKey = (scans: string[]) =>
  scans.includes("Tid Scan") &&
  scans.some((x) => x.endsWith("deliveries_pkey")) &&
  scans.every((x) => x === "Tid Scan" || x === "Bitmap Heap Scan" || x.endsWith("deliveries_pkey"));

describe("a chunk's claim, renewal and mark, on a deliveries table never analyzed", () => {
  it("probe the primary key and update by ctid, never scan the workspace's rows", async () => {
    const ws = (await createWorkspace(t.db.prisma, "marks")).workspace.id;
    const journey = randomUUID();
    const insert = (n: number, status: string) =>
      t.admin.query(
        `INSERT INTO deliveries (workspace_id, id, user_id, channel, journey_id, run_id, node_id, status, attempts, due_at)
         SELECT $1, gen_random_uuid(), 'u-' || i, 'Webhook', $2, gen_random_uuid(), 'n', $4::"DeliveryStatus",
           CASE WHEN $4 = 'Sending' THEN 1 ELSE 0 END, now()
         FROM generate_series(1, $3) i`,
        [ws, journey, n, status],
      );
    // Never analyzed (as in a new server: autovacuum analyzes a table only after its first changes,
    // at its next round, up to a minute later), the table is estimated by its size alone.
    await insert(60_000, "Sending");
    await insert(20_000, "Queued");
    const { rows } = await t.admin.query<{ id: string }>(
      "SELECT id FROM deliveries WHERE workspace_id = $1 AND status = 'Sending' ORDER BY random() LIMIT 1400",
      [ws],
    );
    const marks = rows.map((r) => ({ id: r.id, attempts: 1, outcome: { status: "sent" as const } }));

    const mark = await statementOf((db) => markDeliveries(db, ws, marks));
    expect(probesByKey(await deliveryScans(mark))).toBe(true);
    const claim = await statementOf((db) =>
      claimDeliveries(db, {
        workspaceId: ws,
        stream: { column: "journey_id", id: journey },
        limit: 1000,
        leaseSeconds: 30,
        contactTraits: {},
      }),
    );
    expect(await deliveryScans(claim)).not.toContainEqual(expect.stringMatching(/Seq Scan|Bitmap|created_at|deliveries_pkey/));

    const ids = rows.map((r) => r.id);
    const claimed = ids.map((id) => ({ id, attempts: 1 }));
    const renewal = await statementOf((db) => renewLeases(db, ws, claimed));
    expect(probesByKey(await deliveryScans(renewal))).toBe(true);
    await t.admin.query("UPDATE deliveries SET due_at = now() - interval '1 hour' WHERE workspace_id = $1 AND id = ANY($2::uuid[])", [
      ws,
      ids,
    ]);
    expect(await renewLeases(t.db.pool, ws, claimed)).toHaveLength(1400);
    const { rows: renewed } = await t.admin.query(
      "SELECT count(*)::int AS n FROM deliveries WHERE workspace_id = $1 AND id = ANY($2::uuid[]) AND status = 'Sending' AND due_at > now() - interval '1 minute'",
      [ws, ids],
    );
    expect(renewed).toEqual([{ n: 1400 }]);

    await markDeliveries(t.db.pool, ws, marks);
    const { rows: after } = await t.admin.query(
      "SELECT status::text, count(*)::int AS n FROM deliveries WHERE workspace_id = $1 AND id = ANY($2::uuid[]) GROUP BY 1",
      [ws, rows.map((r) => r.id)],
    );
    expect(after).toEqual([{ status: "Sent", n: 1400 }]);
  });
});
