// A sender about to hand a slice to its provider with a lease renewed too long ago renews it first
// (lease.ts `hold`). While the database does not answer, it tries again — a warning each time —
// rather than fail the chunk at the first refused connection, and goes on once a renewal lands.
import { randomUUID } from "node:crypto";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { createWorkspace } from "../../src/auth/service.ts";
import { claimDeliveries } from "../../src/messaging/claims.ts";
import { ChunkLease } from "../../src/messaging/lease.ts";
import { testDatabase } from "../segments/support.ts";
import { dbRelay } from "../support/db-relay.ts";
import { queueBroadcastRows } from "./support.ts";

const t = testDatabase(2);
const ROWS = 5;
const LEASE_SECONDS = 2;

describe("a lease held while the database is away", () => {
  it("is renewed once the database answers again, each failed try a warning, and the sender goes on", async () => {
    const ws = (await createWorkspace(t.db.prisma, `hold-${randomUUID()}`)).workspace.id;
    const broadcast = randomUUID();
    await queueBroadcastRows(t.admin, ws, broadcast, ROWS);
    const claimed = await claimDeliveries(t.db.pool, {
      workspaceId: ws,
      stream: { column: "broadcast_id", id: broadcast },
      limit: ROWS,
      leaseSeconds: LEASE_SECONDS,
      contactTraits: {},
    });
    expect(claimed.toSend).toHaveLength(ROWS);
    const claimedAt = await t.admin.query<{ at: Date }>("SELECT max(due_at) AS at FROM deliveries WHERE workspace_id = $1", [ws]);

    const db = await dbRelay(t.url);
    const pool = new pg.Pool({ connectionString: db.url, max: 2, connectionTimeoutMillis: 1000 });
    pool.on("error", () => {}); // an idle connection cut by the relay
    const logs: string[] = [];
    const rows = claimed.toSend.map((c) => ({ id: c.id, attempts: c.attempts }));
    // Claimed more than half a lease ago: `hold` must renew before anything goes out.
    const lease = new ChunkLease(
      { pool, workspaceId: ws, rows, leaseSeconds: LEASE_SECONDS, log: (level, msg) => logs.push(`${level}: ${msg}`) },
      performance.now() - (LEASE_SECONDS * 1000) / 2 - 100,
    );
    try {
      await db.down();
      let held = false;
      const holding = lease.hold().then(() => {
        held = true;
      });
      await new Promise((r) => setTimeout(r, 1200));
      expect(held).toBe(false);
      await db.up();
      await holding;

      expect(logs.some((l) => l.startsWith("warn: renewing delivery leases before sending failed"))).toBe(true);
      expect(lease.lost.size).toBe(0);
      // Every row renewed after the database came back: still Sending at the claim's attempt, its lease later than the claim.
      const { rows: after } = await t.admin.query<{ status: string; attempts: number; renewed: boolean }>(
        "SELECT status::text, attempts, due_at > $2 AS renewed FROM deliveries WHERE workspace_id = $1",
        [ws, claimedAt.rows[0]!.at],
      );
      expect(after).toHaveLength(ROWS);
      for (const r of after) expect(r).toEqual({ status: "Sending", attempts: 1, renewed: true });
    } finally {
      lease.stop();
      await pool.end().catch(() => {});
      await db.close();
    }
  });
});
