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
const USERS = 1000;

/**
 * A workspace with USERS queued deliveries of one journey, one per user (u-0001 … u-1000; the last
 * user's is due last, so it is in the claim's last part), under a cap that never binds; the
 * transaction deciding u-1000 waits on a lock held elsewhere, holding its part's other users' locks.
 */
async function heldClaim() {
  const ws = (await createWorkspace(t.db.prisma, `gated-${randomUUID()}`)).workspace.id;
  const journey = randomUUID();
  await t.admin.query(
    `INSERT INTO profiles (workspace_id, profile_id, traits)
     SELECT $1, 'u-' || lpad(i::text, 4, '0'), '{}'::jsonb FROM generate_series(1, $2) i`,
    [ws, USERS],
  );
  await t.admin.query(
    `INSERT INTO deliveries (workspace_id, id, user_id, channel, journey_id, run_id, node_id, status, due_at)
     SELECT $1, gen_random_uuid(), 'u-' || lpad(i::text, 4, '0'), 'Webhook', $2, gen_random_uuid(), 'n', 'Queued',
       now() - interval '10 seconds' + i * interval '1 millisecond'
     FROM generate_series(1, $3) i`,
    [ws, journey, USERS],
  );
  const { gatekeeper } = createPolicies({ prisma: t.db.prisma, registry: new client.Registry() });
  const policies = PoliciesBody.parse({ frequencyCaps: [{ name: "a day", limit: 100, window: { days: 1 } }] }) as Policies;
  const blocker = new pg.Client({ connectionString: t.url });
  await blocker.connect();
  await blocker.query("SELECT pg_advisory_lock($1, hashtext($2 || ':' || 'u-1000'))", [USER_LOCK_SPACE, ws]);
  const blockerPid = (await blocker.query("SELECT pg_backend_pid() AS pid")).rows[0].pid as number;
  const failures: unknown[] = [];
  const claiming = claimPastGate(
    t.db.pool,
    gatekeeper,
    { workspaceId: ws, stream: { column: "journey_id", id: journey }, limit: USERS, leaseSeconds: 30, contactTraits: {} },
    policies,
    (err) => failures.push(err),
  );
  /** The transaction waiting for u-1000, once it waits: its pid and the user locks it holds. */
  const waiting = async () => {
    for (let i = 0; i < 200; i++) {
      const { rows } = await t.admin.query<{ pid: number; waiting: boolean; granted: number }>(
        `SELECT pid, bool_or(NOT granted) AS waiting, count(*) FILTER (WHERE granted)::int AS granted FROM pg_locks
         WHERE locktype = 'advisory' AND objsubid = 2 AND classid = $1::int8::oid AND pid <> $2
         GROUP BY pid ORDER BY 2 DESC NULLS LAST LIMIT 1`,
        [USER_LOCK_SPACE, blockerPid],
      );
      if (rows[0]?.waiting) return rows[0];
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error("no gate transaction waited for the held user");
  };
  const statuses = async () =>
    (await t.admin.query("SELECT status::text, count(*)::int AS n FROM deliveries WHERE workspace_id = $1 GROUP BY 1 ORDER BY 1", [ws]))
      .rows;
  return { claiming, waiting, blocker, failures, statuses };
}

describe("a gated claim of a large chunk", () => {
  it(`holds at most ${GATED_CLAIM} users' locks at once, and still claims the whole chunk`, { timeout: 60_000 }, async () => {
    const { claiming, waiting, blocker, failures, statuses } = await heldClaim();
    try {
      const seen = await waiting();
      expect(seen.granted).toBeGreaterThan(0);
      expect(seen.granted).toBeLessThanOrEqual(GATED_CLAIM);
      await blocker.query("SELECT pg_advisory_unlock_all()");
      const claim = await claiming;
      expect(claim.picked).toBe(USERS);
      expect(new Set(claim.toSend.map((c) => c.userId)).size).toBe(USERS);
    } finally {
      await blocker.end();
    }
    expect(failures).toEqual([]);
    expect(await statuses()).toEqual([{ status: "Sending", n: USERS }]);
  });

  it("whose last part loses its connection hands over what the parts before it took, and leaves the rest queued", {
    timeout: 60_000,
  }, async () => {
    const { claiming, waiting, blocker, failures, statuses } = await heldClaim();
    try {
      const seen = await waiting();
      await t.admin.query("SELECT pg_terminate_backend($1)", [seen.pid]);
      const claim = await claiming;
      const before = USERS - GATED_CLAIM;
      expect(claim.picked).toBe(before);
      expect(claim.toSend.map((c) => c.userId)).not.toContain("u-1000");
      expect(failures).toHaveLength(1);
      expect(await statuses()).toEqual([
        { status: "Queued", n: GATED_CLAIM },
        { status: "Sending", n: before },
      ]);
    } finally {
      await blocker.end();
    }
  });
});
