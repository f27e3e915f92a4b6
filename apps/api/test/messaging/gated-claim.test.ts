// A chunk the delivery policies' gate decides locks each of its users with an advisory lock: an
// entry of PostgreSQL's shared lock table, which holds about 12 000 at its defaults for the whole
// server, and which every workspace's locks share. A chunk is claimed GATED_CLAIM rows (so users)
// per transaction: eight senders deciding chunks of 2 000 at once would fill it ("out of shared
// memory", for every workspace's transactions that take a lock then).
import { randomUUID } from "node:crypto";
import { type Policies, PoliciesBody } from "@tidings/schema";
import pg from "pg";
import client from "prom-client";
import { describe, expect, it } from "vitest";
import { createWorkspace } from "../../src/auth/service.ts";
import { claimPastGate, GATED_CLAIM } from "../../src/messaging/gated-claim.ts";
import { createPolicies } from "../../src/policies/index.ts";
import { USER_LOCK_SPACE } from "../../src/policies/gate.ts";
import { testDatabase } from "../segments/support.ts";

const t = testDatabase(4);

describe("a gated claim of a large chunk", () => {
  it(`holds at most ${GATED_CLAIM} users' locks at once, and still claims the whole chunk`, { timeout: 60_000 }, async () => {
    const ws = (await createWorkspace(t.db.prisma, "gated")).workspace.id;
    const journey = randomUUID();
    const users = 1000;
    await t.admin.query(
      `INSERT INTO profiles (workspace_id, profile_id, traits)
       SELECT $1, 'u-' || lpad(i::text, 4, '0'), '{}'::jsonb FROM generate_series(1, $2) i`,
      [ws, users],
    );
    await t.admin.query(
      `INSERT INTO deliveries (workspace_id, id, user_id, channel, journey_id, run_id, node_id, status, due_at)
       SELECT $1, gen_random_uuid(), 'u-' || lpad(i::text, 4, '0'), 'Webhook', $2, gen_random_uuid(), 'n', 'Queued', now() - interval '1 second'
       FROM generate_series(1, $3) i`,
      [ws, journey, users],
    );
    const { gatekeeper } = createPolicies({ prisma: t.db.prisma, registry: new client.Registry() });
    const policies = PoliciesBody.parse({ frequencyCaps: [{ name: "a day", limit: 100, window: { days: 1 } }] }) as Policies;

    // The last user in the gate's lock order is held elsewhere: the transaction deciding them waits
    // there, holding the locks of every user of its chunk before them.
    const blocker = new pg.Client({ connectionString: t.url });
    await blocker.connect();
    try {
      await blocker.query("SELECT pg_advisory_lock($1, hashtext($2 || ':' || 'u-1000'))", [USER_LOCK_SPACE, ws]);
      const claiming = claimPastGate(
        t.db.pool,
        gatekeeper,
        { workspaceId: ws, stream: { column: "journey_id", id: journey }, limit: users, leaseSeconds: 30, contactTraits: {} },
        policies,
      );
      const held = async () =>
        (
          await t.admin.query<{ waiting: boolean; granted: number }>(
            `SELECT bool_or(NOT granted) AS waiting, count(*) FILTER (WHERE granted)::int AS granted FROM pg_locks
             WHERE locktype = 'advisory' AND objsubid = 2 AND classid = $1::int8::oid AND pid <> $2
             GROUP BY pid ORDER BY 1 DESC NULLS LAST LIMIT 1`,
            [USER_LOCK_SPACE, (await blocker.query("SELECT pg_backend_pid() AS pid")).rows[0].pid],
          )
        ).rows[0];
      let seen = await held();
      for (let i = 0; i < 200 && !seen?.waiting; i++) {
        await new Promise((r) => setTimeout(r, 50));
        seen = await held();
      }
      expect(seen?.waiting, "a gate transaction waits for the held user").toBe(true);
      expect(seen!.granted).toBeGreaterThan(0);
      expect(seen!.granted).toBeLessThanOrEqual(GATED_CLAIM);
      await blocker.query("SELECT pg_advisory_unlock_all()");
      const claim = await claiming;
      expect(claim.picked).toBe(users);
      expect(new Set(claim.toSend.map((c) => c.userId)).size).toBe(users);
    } finally {
      await blocker.end();
    }
    const { rows } = await t.admin.query("SELECT status::text, count(*)::int AS n FROM deliveries WHERE workspace_id = $1 GROUP BY 1", [
      ws,
    ]);
    expect(rows).toEqual([{ status: "Sending", n: users }]);
  });
});
