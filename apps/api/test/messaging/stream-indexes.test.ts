// The deliveries' source indexes are partial: a broadcast's rows are only in the broadcast
// indexes, a journey's only in the journey ones (each write of a row updates the indexes it is in,
// and no write of a delivery is HOT). That holds only while every query of those indexes names its
// source, so the planner can prove the predicate: a broadcast's claims, counts and cancels must
// still be able to read their index, or they would read the whole table.
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createWorkspace } from "../../src/auth/service.ts";
import { testDatabase } from "../segments/support.ts";

const t = testDatabase();

type Plan = { "Node Type": string; "Index Name"?: string; Plans?: Plan[] };
const indexes = (plan: Plan): string[] => [...(plan["Index Name"] ? [plan["Index Name"]] : []), ...(plan.Plans ?? []).flatMap(indexes)];

describe("the deliveries' source indexes", () => {
  it("hold only their own source's rows, and every query shape naming a broadcast can read them", async () => {
    const ws = (await createWorkspace(t.db.prisma, "indexes")).workspace.id;
    const [broadcast, journey] = [randomUUID(), randomUUID()];
    const { rows: defs } = await t.admin.query<{ indexname: string; indexdef: string }>(
      "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'deliveries' AND indexdef ~ '(broadcast|journey|run)_id'",
    );
    for (const d of defs) expect(d.indexdef, d.indexname).toMatch(/WHERE \((broadcast_id|journey_id|run_id) IS NOT NULL\)$/);

    await t.admin.query("SET enable_seqscan = off");
    try {
      const plan = async (text: string, values: unknown[]) =>
        indexes((await t.admin.query({ text: `EXPLAIN (FORMAT JSON) ${text}`, values })).rows[0]["QUERY PLAN"][0].Plan);
      // A claim's scan (messaging/claims.ts), a stream's next due (nextDue), the broadcast's completion count.
      expect(
        await plan(
          `SELECT id FROM deliveries WHERE workspace_id = $1 AND broadcast_id = $2 AND status = 'Queued' AND due_at <= now() ORDER BY due_at LIMIT 10`,
          [ws, broadcast],
        ),
      ).toEqual(["deliveries_workspace_id_broadcast_id_status_due_at_idx"]);
      expect(await plan("SELECT count(*) FROM deliveries WHERE workspace_id = $1 AND broadcast_id = $2", [ws, broadcast])).toEqual([
        expect.stringMatching(/^deliveries_workspace_id_broadcast_id_/),
      ]);
      // The counts of running broadcasts (broadcasts/service.ts: Prisma's `in`).
      expect(
        await plan("SELECT status, count(*) FROM deliveries WHERE workspace_id = $1 AND broadcast_id IN ($2, $3) GROUP BY status", [
          ws,
          broadcast,
          randomUUID(),
        ]),
      ).toEqual([expect.stringMatching(/^deliveries_workspace_id_broadcast_id_/)]);
      expect(
        await plan(`SELECT id FROM deliveries WHERE workspace_id = $1 AND journey_id = $2 AND status = 'Queued' ORDER BY due_at LIMIT 10`, [
          ws,
          journey,
        ]),
      ).toEqual(["deliveries_workspace_id_journey_id_status_due_at_idx"]);
    } finally {
      await t.admin.query("RESET enable_seqscan");
    }
  });
});
