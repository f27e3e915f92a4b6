// A sender whose lease ran out while it was still sending (its renewal came too late: a stalled
// process, a database away for longer than the lease) and whose rows another sender has claimed
// since sends none of them after it learns so, and marks none of them: they are the other
// sender's now. Only what it had in flight is sent twice, under the same id.
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import client from "prom-client";
import { afterAll, describe, expect, it } from "vitest";
import { createWorkspace } from "../../src/auth/service.ts";
import { SecretBox } from "../../src/lib/secrets.ts";
import { createSenders } from "../../src/messaging/channels/index.ts";
import { claimDeliveries } from "../../src/messaging/claims.ts";
import { markDeliveries, renewLeases } from "../../src/messaging/marks.ts";
import { messagingMetrics } from "../../src/messaging/metrics.ts";
import { WebhookSender } from "../../src/messaging/channels/webhook.ts";
import { Deliverer, type Senders } from "../../src/messaging/send-chunk.ts";
import { createPolicies } from "../../src/policies/index.ts";
import { RenderPool } from "../../src/templates/render-pool.ts";
import { testDatabase } from "../segments/support.ts";
import { queueBroadcastRows } from "./support.ts";
import { loopback } from "../support/outbound.ts";

const t = testDatabase(4);
const KEY = "test-secret-key-0123456789abcdef0123456789";
const ROWS = 40;
const SLICE = 8;
const LEASE_SECONDS = 2;

/** A webhook receiver that holds every request until `release()`, then answers at once. */
function holdingReceiver() {
  const ids: string[] = [];
  const held: ServerResponse[] = [];
  let releasing = false;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on("end", () => {
      ids.push(String(req.headers["webhook-id"]));
      if (releasing) res.end("ok");
      else held.push(res);
    });
  });
  return {
    ids,
    held,
    async listen() {
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    },
    release() {
      releasing = true;
      for (const res of held.splice(0)) res.end("ok");
    },
    close: () => new Promise((r) => server.close(r)),
  };
}

const until = async (what: string, ok: () => boolean) => {
  for (let i = 0; i < 200 && !ok(); i++) await new Promise((r) => setTimeout(r, 25));
  if (!ok()) throw new Error(`timed out waiting for ${what}`);
};

/**
 * Claims ROWS rows as one chunk and sends them to a receiver that holds what arrives; once SLICE
 * requests are held, another sender claims every row (as after the lease ran out). Then only those
 * SLICE may have gone out, the rest is logged as not sent, and every row is the other sender's.
 */
async function lostWhileInFlight(
  newDeliverer: (logs: string[], o: { sendSlice?: number; senders?: Senders }) => Deliverer,
  o: { sendSlice?: number; senders?: Senders },
) {
  const receiver = holdingReceiver();
  const url = await receiver.listen();
  const ws = (await createWorkspace(t.db.prisma, `lease-${randomUUID()}`)).workspace.id;
  const broadcast = randomUUID();
  await queueBroadcastRows(t.admin, ws, broadcast, ROWS);
  const logs: string[] = [];
  const deliverer = newDeliverer(logs, o);
  const stream = { column: "broadcast_id" as const, id: broadcast };
  const settings = {
    template: { type: "Webhook" as const, url: `${url}/hook`, method: "POST" as const, body: '{"user":"{{ user.id }}"}' },
    rateLimitPerSecond: null,
  };
  const chunk = await deliverer.claimChunk(ws, stream, settings);
  expect(chunk.picked).toBe(ROWS);
  const sending = chunk.send();
  try {
    // The first SLICE messages are at the provider, held there.
    await until("the first messages", () => receiver.held.length >= SLICE);

    // The lease runs out unrenewed and another sender claims every row, in one transaction (the
    // first sender's renewal, if it comes meanwhile, waits for it and then finds no row its own).
    const other = await t.db.pool.connect();
    try {
      await other.query("BEGIN");
      await other.query("UPDATE deliveries SET due_at = now() - interval '1 hour' WHERE workspace_id = $1 AND status = 'Sending'", [ws]);
      const taken = await claimDeliveries(other, { workspaceId: ws, stream, limit: 1000, leaseSeconds: LEASE_SECONDS, contactTraits: {} });
      await other.query("COMMIT");
      expect(taken.toSend).toHaveLength(ROWS);
    } finally {
      other.release();
    }
    // Longer than half the lease: the first sender has renewed since (its timer renews every
    // third), or renews before its next slice.
    await new Promise((r) => setTimeout(r, (LEASE_SECONDS * 1000) / 2 + 200));
    receiver.release();
    await sending;

    // Only what was in flight when the rows were taken went out; each request once.
    expect(receiver.ids).toHaveLength(SLICE);
    expect(new Set(receiver.ids).size).toBe(SLICE);
    expect(logs).toContainEqual(
      `${ROWS - SLICE} deliveries were not sent: they are no longer this sender's (its lease ran out before it renewed it, and another sender claimed them)`,
    );
    // Every row is still the other sender's claim: Sending, at its attempt.
    const { rows } = await t.admin.query(
      "SELECT status::text, attempts, count(*)::int AS n FROM deliveries WHERE workspace_id = $1 GROUP BY 1, 2",
      [ws],
    );
    expect(rows).toEqual([{ status: "Sending", attempts: 2, n: ROWS }]);
  } finally {
    receiver.release();
    await sending.catch(() => {});
    await receiver.close();
  }
}

describe("a sender whose lease ran out and whose rows another sender claimed", () => {
  const renders = new RenderPool({ secretKey: KEY, publicUrl: "http://tidings.test", threads: 1 });
  const senders = createSenders({ guard: loopback.guard });
  afterAll(async () => {
    await renders.close();
    await senders.close();
  });
  /** A deliverer on the test database with the lease above; its log lines go to `logs`. */
  const newDeliverer = (logs: string[], o: { sendSlice?: number; senders?: Senders } = {}) =>
    new Deliverer({
      pool: t.db.pool,
      prisma: t.db.prisma,
      box: new SecretBox(KEY),
      senders: o.senders ?? senders,
      renders,
      gatekeeper: createPolicies({ prisma: t.db.prisma, registry: new client.Registry() }).gatekeeper,
      leaseSeconds: LEASE_SECONDS,
      metrics: messagingMetrics(new client.Registry()),
      log: (_level, message) => logs.push(message),
      sendSlice: o.sendSlice,
    });

  it("sends none of them once it knows, and does not mark them", { timeout: 60_000 }, async () => {
    // The first slice of 8 is in flight when the rows are taken; the next slice waits for a renewal.
    await lostWhileInFlight(newDeliverer, { sendSlice: SLICE });
  });

  it("sends no more messages of a slice once a renewal finds its rows taken", { timeout: 60_000 }, async () => {
    // One slice of 40 at a provider taking 8 at a time: the renewals every third of the lease,
    // while the first 8 are held, find the rows taken, and the 32 after them never go out.
    const webhook = new WebhookSender({ guard: loopback.guard, concurrency: SLICE });
    try {
      await lostWhileInFlight(newDeliverer, { senders: { ...senders, Webhook: webhook } });
    } finally {
      await webhook.close();
    }
  });

  it("a mark or renewal of an earlier claim passes by a row claimed again since", async () => {
    const ws = (await createWorkspace(t.db.prisma, `lease-${randomUUID()}`)).workspace.id;
    const { rows } = await t.admin.query<{ id: string }>(
      `INSERT INTO deliveries (workspace_id, id, user_id, channel, broadcast_id, status, attempts, due_at)
       SELECT $1, gen_random_uuid(), 'u-' || i, 'Webhook', $2, 'Sending', 2, now() FROM generate_series(1, 3) i RETURNING id`,
      [ws, randomUUID()],
    );
    const earlier = rows.map((r) => ({ id: r.id, attempts: 1 }));
    expect(await renewLeases(t.db.pool, ws, earlier)).toEqual([]);
    await markDeliveries(
      t.db.pool,
      ws,
      earlier.map((m) => ({ ...m, outcome: { status: "sent" as const } })),
    );
    const { rows: after } = await t.admin.query(
      "SELECT status::text, attempts, count(*)::int AS n FROM deliveries WHERE workspace_id = $1 GROUP BY 1, 2",
      [ws],
    );
    expect(after).toEqual([{ status: "Sending", attempts: 2, n: 3 }]);
    // The current claim's own mark goes through.
    await markDeliveries(
      t.db.pool,
      ws,
      rows.map((r) => ({ id: r.id, attempts: 2, outcome: { status: "sent" as const } })),
    );
    const { rows: sent } = await t.admin.query(
      "SELECT status::text, count(*)::int AS n FROM deliveries WHERE workspace_id = $1 GROUP BY 1",
      [ws],
    );
    expect(sent).toEqual([{ status: "Sent", n: 3 }]);
  });

  it("a chunk's mark does not start beside a renewal of its rows, and marks every row", { timeout: 60_000 }, async () => {
    // A renewal that commits while the mark waits for its rows' locks gives them versions the
    // mark's update (by ctid, under its snapshot) cannot see: the mark returned with them still
    // Sending, and they were sent again after the lease (slow-providers.test.ts under CPU load).
    const receiver = holdingReceiver();
    const url = await receiver.listen();
    const ws = (await createWorkspace(t.db.prisma, `lease-${randomUUID()}`)).workspace.id;
    const broadcast = randomUUID();
    await t.admin.query(
      `INSERT INTO profiles (workspace_id, profile_id, traits) SELECT $1, 'u-' || i, '{}'::jsonb FROM generate_series(1, 5) i`,
      [ws],
    );
    await t.admin.query(
      `INSERT INTO deliveries (workspace_id, id, user_id, channel, broadcast_id, status, due_at)
       SELECT $1, gen_random_uuid(), 'u-' || i, 'Webhook', $2, 'Queued', now() - interval '1 minute' FROM generate_series(1, 5) i`,
      [ws, broadcast],
    );
    const deliverer = newDeliverer([]);
    const chunk = await deliverer.claimChunk(
      ws,
      { column: "broadcast_id", id: broadcast },
      {
        template: { type: "Webhook", url: `${url}/hook`, method: "POST", body: "{}" },
        rateLimitPerSecond: null,
      },
    );
    const sending = chunk.send();
    const holder = await t.db.pool.connect();
    try {
      await until("the chunk at the receiver", () => receiver.held.length === 5);
      // Another transaction holds the rows: the lease's next renewal waits for them.
      await holder.query("BEGIN");
      await holder.query("SELECT 1 FROM deliveries WHERE workspace_id = $1 FOR UPDATE", [ws]);
      for (let i = 0; i < 200; i++) {
        const { rows } = await t.admin.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()",
        );
        if (rows[0]!.n > 0) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      // The provider answers: the chunk goes on to its mark while that renewal waits.
      receiver.release();
      await new Promise((r) => setTimeout(r, 300));
      await holder.query("COMMIT");
      await sending;
    } finally {
      await holder.query("ROLLBACK").catch(() => {});
      holder.release();
      receiver.release();
      await sending.catch(() => {});
      await receiver.close();
    }
    const { rows } = await t.admin.query("SELECT status::text, count(*)::int AS n FROM deliveries WHERE workspace_id = $1 GROUP BY 1", [
      ws,
    ]);
    expect(rows).toEqual([{ status: "Sent", n: 5 }]);
  });
});
