// A sender about to hand a slice to its provider with a lease renewed too long ago renews it first
// (lease.ts `hold`). While the database does not answer, it tries again — a warning each time —
// rather than fail the chunk at the first refused connection, and goes on once a renewal lands.
import { randomUUID } from "node:crypto";
import net from "node:net";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { createWorkspace } from "../../src/auth/service.ts";
import { claimDeliveries } from "../../src/messaging/claims.ts";
import { ChunkLease } from "../../src/messaging/lease.ts";
import { testDatabase } from "../segments/support.ts";

const t = testDatabase(2);
const ROWS = 5;
const LEASE_SECONDS = 2;

/** A TCP relay to PostgreSQL that can be taken down (every connection cut, new ones refused) and brought back on its port. */
async function relay(target: { host: string; port: number }) {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((inbound) => {
    const outbound = net.connect(target.port, target.host);
    for (const s of [inbound, outbound]) {
      sockets.add(s);
      s.on("error", () => {});
      s.on("close", () => sockets.delete(s));
    }
    inbound.pipe(outbound).pipe(inbound);
  });
  const listen = (port: number) => new Promise<void>((r) => server.listen(port, "127.0.0.1", r));
  await listen(0);
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    down: async () => {
      const closed = new Promise((r) => server.close(r));
      for (const s of sockets) s.destroy();
      await closed;
    },
    up: () => listen(port),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

describe("a lease held while the database is away", () => {
  it("is renewed once the database answers again, each failed try a warning, and the sender goes on", async () => {
    const ws = (await createWorkspace(t.db.prisma, `hold-${randomUUID()}`)).workspace.id;
    const broadcast = randomUUID();
    await t.admin.query(
      `INSERT INTO profiles (workspace_id, profile_id, traits) SELECT $1, 'u-' || i, '{}'::jsonb FROM generate_series(1, $2) i`,
      [ws, ROWS],
    );
    await t.admin.query(
      `INSERT INTO deliveries (workspace_id, id, user_id, channel, broadcast_id, status, due_at)
       SELECT $1, gen_random_uuid(), 'u-' || i, 'Webhook', $2, 'Queued', now() - interval '1 minute' FROM generate_series(1, $3) i`,
      [ws, broadcast, ROWS],
    );
    const claimed = await claimDeliveries(t.db.pool, {
      workspaceId: ws,
      stream: { column: "broadcast_id", id: broadcast },
      limit: ROWS,
      leaseSeconds: LEASE_SECONDS,
      contactTraits: {},
    });
    expect(claimed.toSend).toHaveLength(ROWS);
    const claimedAt = await t.admin.query<{ at: Date }>("SELECT max(due_at) AS at FROM deliveries WHERE workspace_id = $1", [ws]);

    const url = new URL(t.url);
    const db = await relay({ host: url.hostname, port: Number(url.port) });
    url.hostname = "127.0.0.1";
    url.port = String(db.port);
    const pool = new pg.Pool({ connectionString: url.toString(), max: 2, connectionTimeoutMillis: 1000 });
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
