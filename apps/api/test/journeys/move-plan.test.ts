// A runtime batch's write of its runs updates each where the batch's select found it (its ctid),
// by a TID scan, whatever the table's statistics say. With none yet (timers loaded into a new
// server: autovacuum analyzes a table only at its next round after enough changes), the update
// joined to its runs' ctids found by primary key was planned as a hash join over a scan of the
// whole table: 680 ms a batch of 1 000 at 100 000 runs (bench:journeys, a hundred thousand timers
// due at one instant: 19.9 s instead of 4.7), growing with the table.
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createWorkspace } from "../../src/auth/service.ts";
import type { Sql } from "../../src/db/sql.ts";
import { type Final, moveRuns } from "../../src/journeys/runtime/advance.ts";
import { testDatabase } from "../segments/support.ts";
import { scansOf } from "../support/plans.ts";

const t = testDatabase();

describe("a runtime batch's write of its runs, on a journey_runs table never analyzed", () => {
  it("updates each run by its ctid, never scans the table", async () => {
    const ws = (await createWorkspace(t.db.prisma, "moves")).workspace.id;
    const journey = randomUUID();
    await t.admin.query("INSERT INTO journeys (workspace_id, id, name, status, version) VALUES ($1, $2, 'j', 'Running', 1)", [ws, journey]);
    // Never analyzed (as in a new server), the table is estimated by its size alone.
    await t.admin.query(
      `INSERT INTO journey_runs (workspace_id, id, journey_id, version, user_id, node_id, waiting, wait_until, due_at, entered_at, updated_at)
       SELECT $1, gen_random_uuid(), $2, 1, 'u-' || i, 'wait', true, now(), now(), now(), now() FROM generate_series(1, 100000) i`,
      [ws, journey],
    );
    const { rows } = await t.admin.query<{ id: string; tid: string }>(
      "SELECT ctid::text AS tid, id FROM journey_runs WHERE workspace_id = $1 ORDER BY random() LIMIT 1000",
      [ws],
    );
    const now = new Date();
    const finals: Final[] = rows.map((r) => ({
      run: { id: r.id, userId: "", version: 1, nodeId: "exit", waiting: false, waitUntil: null, event: null },
      status: "Completed",
      dueAt: null,
    }));
    // The statements as the batch sends them, explained and run in one transaction.
    const sent: Sql[] = [];
    await moveRuns({ query: (async (q: Sql) => sent.push(q)) as never }, finals, new Map(rows.map((r) => [r.id, r.tid])), now);
    const update = sent.pop()!;
    await t.admin.query("BEGIN");
    for (const q of sent) await t.admin.query({ text: q.text, values: q.values });
    const scans = await scansOf(t.admin, update, "journey_runs");
    expect(scans).toEqual(["Tid Scan"]);

    await t.admin.query({ text: update.text, values: update.values });
    await t.admin.query("COMMIT");
    const { rows: after } = await t.admin.query(
      "SELECT status::text, node_id, count(*)::int AS n FROM journey_runs WHERE workspace_id = $1 AND id = ANY($2::uuid[]) GROUP BY 1, 2",
      [ws, rows.map((r) => r.id)],
    );
    expect(after).toEqual([{ status: "Completed", node_id: "exit", n: 1000 }]);
  });
});
