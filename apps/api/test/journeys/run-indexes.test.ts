// A user's runs, of every journey or of one, are read through one index, (workspace_id, user_id,
// journey_id, entered_at): it replaced two (by journey then user, and by user), each of which every
// write of a run paid (no write of a run is HOT). Each read by user must still find it.
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createWorkspace } from "../../src/auth/service.ts";
import { testDatabase } from "../segments/support.ts";

const t = testDatabase();
const INDEX = "journey_runs_workspace_id_user_id_journey_id_entered_at_idx";

describe("journey_runs read by user", () => {
  it("use the one index of a user's runs", async () => {
    const ws = (await createWorkspace(t.db.prisma, "runs by user")).workspace.id;
    const journeys = [randomUUID(), randomUUID()];
    for (const [i, j] of journeys.entries())
      await t.admin.query("INSERT INTO journeys (workspace_id, id, name, status, version) VALUES ($1, $2, $3, 'Running', 1)", [
        ws,
        j,
        `j${i}`,
      ]);
    await t.admin.query(
      `INSERT INTO journey_runs (workspace_id, id, journey_id, version, user_id, node_id, status, entered_at, updated_at)
       SELECT $1, gen_random_uuid(), ($2::uuid[])[1 + i % 2], 1, 'u-' || (i / 2), 'exit', 'Completed', now(), now()
       FROM generate_series(1, 40000) i`,
      [ws, journeys],
    );
    await t.admin.query("ANALYZE journey_runs");
    const indexesOf = async (text: string, values: unknown[]) => {
      const { rows } = await t.admin.query({ text: `EXPLAIN ${text}`, values });
      return rows.map((r) => r["QUERY PLAN"] as string).join("\n");
    };
    // Whether a user ever ran a journey (entries.ts, a journey that runs once per user).
    expect(
      await indexesOf("SELECT 1 FROM journey_runs r WHERE r.workspace_id = $1 AND r.journey_id = $2 AND r.user_id = $3", [
        ws,
        journeys[0],
        "u-7",
      ]),
    ).toContain(INDEX);
    // A journey's runs filtered by user, newest first (runs.ts listRuns).
    expect(
      await indexesOf(
        "SELECT * FROM journey_runs WHERE workspace_id = $1 AND journey_id = $2 AND user_id = $3 ORDER BY entered_at DESC, id DESC LIMIT 51",
        [ws, journeys[1], "u-7"],
      ),
    ).toContain(INDEX);
    // A user's runs of every journey (runs.ts userRuns), and a user's erasure (users/service.ts).
    expect(
      await indexesOf("SELECT * FROM journey_runs WHERE workspace_id = $1 AND user_id = $2 ORDER BY entered_at DESC, id DESC LIMIT 50", [
        ws,
        "u-7",
      ]),
    ).toContain(INDEX);
    expect(await indexesOf("UPDATE journey_runs SET event = NULL WHERE workspace_id = $1::uuid AND user_id = $2", [ws, "u-7"])).toContain(
      INDEX,
    );
    const { rows } = await t.admin.query(
      "SELECT indexname FROM pg_indexes WHERE tablename = 'journey_runs' AND indexdef LIKE '%(workspace_id, %user_id%' ORDER BY 1",
    );
    expect(rows.map((r) => r.indexname)).toEqual(["journey_runs_workspace_id_journey_id_user_id_key", INDEX]);
  });
});
