// A frequency cap counts a user's sends by one index probe per user. On statistics a burst of
// sends had made stale (taken while the workspace's messages were Queued), the count read them
// through an index leading with the status instead: every Sent row of the workspace, for each chunk
// (138 ms for 200 users with 150 000 sent, in bench:policies, and growing with the workspace).
import { type Policies, PoliciesBody } from "@tidings/schema";
import { describe, expect, it } from "vitest";
import { createWorkspace } from "../../src/auth/service.ts";
import { countedSends, type UserCaps } from "../../src/policies/gate.ts";
import { testDatabase } from "../segments/support.ts";
import { explain, planNodes } from "../support/plans.ts";

const t = testDatabase();

describe("a frequency cap's count", () => {
  it("reads each user's deliveries by the user index, whatever stale statistics say about their status", async () => {
    const ws = (await createWorkspace(t.db.prisma, "caps")).workspace.id;
    // Two broadcasts of 30 000 messages, analyzed while queued, then sent.
    await t.admin.query(
      `INSERT INTO deliveries (workspace_id, id, user_id, channel, broadcast_id, status)
       SELECT $1, gen_random_uuid(), 'u-' || i, 'Webhook', b, 'Queued'
       FROM generate_series(1, 30000) i CROSS JOIN (SELECT gen_random_uuid() AS b FROM generate_series(1, 2)) b`,
      [ws],
    );
    await t.admin.query("ANALYZE deliveries");
    await t.admin.query("UPDATE deliveries SET status = 'Sent', sent_at = now() WHERE workspace_id = $1", [ws]);
    const policies = PoliciesBody.parse({
      frequencyCaps: [
        { name: "a day", limit: 100, window: { days: 1 } },
        { name: "an hour", limit: 50, window: { seconds: 3600 }, channel: "Webhook" },
      ],
    });
    const since = Date.now() - 3600_000;
    const users: UserCaps[] = Array.from({ length: 200 }, (_, i) => ({ user: `u-${i + 1}`, since: [1, 1] }));
    const query = countedSends(ws, policies as Policies, [since], users, "count");
    const plan = planNodes(await explain(t.admin, query));
    const indexes = plan.flatMap((n) => (n["Index Name"]?.startsWith("deliveries") ? [n["Index Name"]] : []));
    expect(indexes.length).toBeGreaterThan(0);
    expect(new Set(indexes)).toEqual(new Set(["deliveries_workspace_id_user_id_idx"]));
    expect(plan.filter((n) => n["Relation Name"] === "deliveries" && n["Node Type"] === "Seq Scan")).toEqual([]);
    const counted = await t.admin.query({ text: query.text, values: query.values });
    expect(counted.rows).toHaveLength(200);
    expect(counted.rows.every((r) => r.v0 === 2 && r.v1 === 2)).toBe(true);
  });
});
