// The runtime's searches for due runs (journeys/runtime/due.ts) read the timer index in its order,
// whatever the statistics say. Taken while runs were due (a journey's members entering), they
// estimate that most runs are due: an EXISTS of due runs was then planned as a scan of journey_runs
// that, finding none due, read the whole table (16–38 ms a call at 300 000–500 000 runs in
// bench:journeys, once a second by the deployment's tick).
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createWorkspace } from "../../src/auth/service.ts";
import { dueWorkspacesQuery, nextDueQuery } from "../../src/journeys/runtime/due.ts";
import { testDatabase } from "../segments/support.ts";
import { scansOf } from "../support/plans.ts";

const t = testDatabase();

describe("the searches for due runs, on statistics taken while every run was due", () => {
  it("read the timer index, never scan journey_runs, and find what is due", async () => {
    const ws = (await createWorkspace(t.db.prisma, "due")).workspace.id;
    const journey = randomUUID();
    await t.admin.query("INSERT INTO journeys (workspace_id, id, name, status, version) VALUES ($1, $2, 'j', 'Running', 1)", [ws, journey]);
    await t.admin.query("ALTER TABLE journey_runs SET (autovacuum_enabled = false)");
    await t.admin.query(
      `INSERT INTO journey_runs (workspace_id, id, journey_id, version, user_id, node_id, waiting, due_at, entered_at, updated_at)
       SELECT $1, gen_random_uuid(), $2, 1, 'u-' || i, 'm', false, now() - interval '1 hour', now(), now() FROM generate_series(1, 100000) i`,
      [ws, journey],
    );
    await t.admin.query("ANALYZE journey_runs");
    // Then every run moves on to wait an hour (statistics not taken again).
    await t.admin.query("UPDATE journey_runs SET waiting = true, due_at = now() + interval '1 hour' WHERE workspace_id = $1", [ws]);
    const now = new Date();

    const byTimerIndex = [expect.stringMatching(/^Index (Only )?Scan journey_runs_workspace_id_journey_id_due_at_idx$/)];
    expect(await scansOf(t.admin, dueWorkspacesQuery(now), "journey_runs")).toEqual(byTimerIndex);
    expect(await scansOf(t.admin, nextDueQuery(ws, now), "journey_runs")).toEqual(byTimerIndex);

    expect((await t.admin.query(dueWorkspacesQuery(now))).rows).toEqual([]);
    const soon = new Date(now.getTime() + 3_600_000 + 60_000);
    expect((await t.admin.query(dueWorkspacesQuery(soon))).rows).toEqual([{ workspace_id: ws }]);
    const { rows } = await t.admin.query(nextDueQuery(ws, now));
    expect(rows[0].at.getTime()).toBeGreaterThan(now.getTime() + 3_500_000);
  });
});
