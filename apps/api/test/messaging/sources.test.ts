// Delivery sources: journey-shaped deliveries (a (run, node) source, queued here as the journey
// runtime queues them) go through the same pipeline as a broadcast's — claimed, sent once with
// the run's event in the Liquid scope, marked — a second queue of one (run, node) is a no-op, a
// Paused journey's messages wait, and the database refuses a delivery without exactly one source.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { sql } from "../../src/db/sql.ts";
import { inTransaction } from "../../src/db/transaction.ts";
import { queueJourneyMessages, wakeJourneySenders } from "../../src/journeys/delivery-source.ts";
import { waitFor } from "../broadcasts/support.ts";
import { identify, segmentWorld } from "../segments/support.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";

let t: TestApp;
let receiver: Receiver;
let receiverUrl: string;
/** webhook-id → bodies received with it. */
const got = new Map<string, string[]>();

beforeAll(async () => {
  receiver = await startReceiver(({ id, body }, res) => {
    got.set(id, [...(got.get(id) ?? []), body]);
    res.writeHead(200).end();
  });
  receiverUrl = receiver.url;
  t = await createTestApp({ outboundAllowedHosts: ["127.0.0.1"] });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

async function journeyWorld(status: "Running" | "Paused") {
  const w = await segmentWorld(t);
  await w.send(["ann", "bob", "cy"].map((u) => identify(u, { plan: "pro" }, Date.now() - 1000)));
  const template = await w.admin("PUT", "/api/admin/content/templates", {
    name: "welcome",
    definition: {
      type: "Webhook",
      url: `${receiverUrl}/hook`,
      method: "POST",
      body: '{"user":"{{ user.id }}","sku":"{{ event.properties.sku }}"}',
    },
  });
  const journey = await t.ctx.db.prisma.journey.create({ data: { workspaceId: w.ws.id, name: `j-${randomUUID()}`, status } });
  const queue = async (userId: string, runId: string, nodeId = "send-welcome") => {
    const client = await t.ctx.db.pool.connect();
    try {
      const inserted = await inTransaction(client, async () => {
        const insert = queueJourneyMessages(t.ctx.sends, w.ws.id, journey.id, [
          {
            run: {
              id: runId,
              userId,
              version: 1,
              nodeId,
              waiting: false,
              waitUntil: null,
              event: { event: "Order Placed", properties: { sku: `sku-${userId}` } },
            },
            node: { id: nodeId, type: "MessageNode", channel: "Webhook", templateId: template.id, child: "ExitNode" },
          },
        ]);
        return (await client.query(insert)).rowCount;
      });
      await wakeJourneySenders(t.ctx.sends, w.ws.id, journey.id);
      return inserted;
    } finally {
      client.release();
    }
  };
  const deliveries = async () => (await w.admin("GET", `/api/admin/deliveries?journeyId=${journey.id}`)).items as any[];
  return { w, journey, queue, deliveries };
}

describe("journey-shaped deliveries", () => {
  it("are claimed, sent once with the run's event and marked; a second queue of one (run, node) is a no-op", async () => {
    const { queue, deliveries, journey } = await journeyWorld("Running");
    const runs = { ann: randomUUID(), bob: randomUUID(), cy: randomUUID() };
    for (const [user, run] of Object.entries(runs)) expect(await queue(user, run)).toBe(1);
    expect(await queue("ann", runs.ann)).toBe(0);

    const sent = await waitFor(deliveries, (ds) => ds.length === 3 && ds.every((d) => d.status === "Sent"));
    expect(sent.map((d) => d.status)).toEqual(["Sent", "Sent", "Sent"]);
    for (const d of sent) {
      expect(d).toMatchObject({ journeyId: journey.id, runId: runs[d.userId as keyof typeof runs], nodeId: "send-welcome", attempts: 1 });
      expect(d.broadcastId).toBeUndefined();
      expect(got.get(d.id)?.map((b) => JSON.parse(b))).toEqual([{ user: d.userId, sku: `sku-${d.userId}` }]);
    }
    // The same run reaching another message node is another delivery.
    expect(await queue("ann", runs.ann, "send-reminder")).toBe(1);
    expect(await waitFor(deliveries, (ds) => ds.filter((d) => d.status === "Sent").length === 4)).toHaveLength(4);
  });

  it("wait while the journey is Paused and go out once it runs again", async () => {
    const { queue, deliveries, journey } = await journeyWorld("Paused");
    await queue("bob", randomUUID());
    await new Promise((r) => setTimeout(r, 1500));
    expect((await deliveries()).map((d) => d.status)).toEqual(["Queued"]);
    await t.ctx.db.prisma.journey.update({
      where: { workspaceId_id: { workspaceId: journey.workspaceId, id: journey.id } },
      data: { status: "Running" },
    });
    // Nothing wakes the senders here: the tick finds the waiting delivery.
    expect((await waitFor(deliveries, (ds) => ds[0]?.status === "Sent")).map((d) => d.status)).toEqual(["Sent"]);
  });

  it("wake senders after the batch's commit only in free slots; a sender whose claim finds the due rows held claims again", async () => {
    const { w, queue, deliveries, journey } = await journeyWorld("Running");
    // The senders' slot locks (src/messaging/senders.ts): held here, they stand for live senders.
    const slotLock = (slot: number) => sql`(${0x7464736e}::int, hashtext(${`journey:${w.ws.id}:${journey.id}:${slot}`}))`;
    const senders = await t.ctx.db.pool.connect();
    const holder = await t.ctx.db.pool.connect();
    const add = vi.spyOn(t.ctx.jobs, "add");
    const sendersAdded = () =>
      add.mock.calls
        // Not those put off for a second (a workspace over its share of senders).
        .filter(([task, p, o]) => task === "deliveries.send" && (p as { id: string }).id === journey.id && !o?.runAt)
        .map(([, p]) => p);
    try {
      for (let slot = 0; slot < 4; slot++) await senders.query(sql`SELECT pg_advisory_lock${slotLock(slot)}`);
      // A batch queued while every slot's sender runs starts none: each goes on with the new rows.
      expect(await queue("ann", randomUUID())).toBe(1);
      expect(sendersAdded()).toEqual([]);
      await new Promise((r) => setTimeout(r, 1200)); // the tick too leaves a stream with live senders alone
      const [queued] = await deliveries();
      expect(queued.status).toBe("Queued");

      // The row is held elsewhere when a sender's claim comes (SKIP LOCKED passes it by): with the
      // row due, the sender claims again shortly in its slot rather than end and leave it to the tick.
      await holder.query("BEGIN");
      await holder.query(sql`SELECT 1 FROM deliveries WHERE workspace_id = ${w.ws.id} AND id = ${queued.id} FOR UPDATE`);
      await senders.query("SELECT pg_advisory_unlock_all()");
      setTimeout(() => void holder.query("ROLLBACK"), 300);
      await t.ctx.sends.send({ kind: "journey", workspaceId: w.ws.id, id: journey.id, slot: 0 });
      const [sent] = await deliveries();
      expect([sent.status, got.get(sent.id)?.length]).toEqual(["Sent", 1]);
    } finally {
      add.mockRestore();
      await holder.query("ROLLBACK").catch(() => {});
      await senders.query("SELECT pg_advisory_unlock_all()");
      senders.release();
      holder.release();
    }
  });

  it("the database refuses a delivery with no source, or with two", async () => {
    const { w, journey } = await journeyWorld("Running");
    const insert = (broadcastId: string | null, runId: string | null) =>
      t.ctx.db.pool.query(
        `INSERT INTO deliveries (workspace_id, id, user_id, channel, journey_id, broadcast_id, run_id, node_id, status)
         VALUES ($1, gen_random_uuid(), 'ann', 'Webhook', $2, $3, $4, $5, 'Queued')`,
        [w.ws.id, runId ? journey.id : null, broadcastId, runId, runId ? "n" : null],
      );
    await expect(insert(null, null)).rejects.toThrow(/deliveries_one_source/);
    await expect(insert(randomUUID(), randomUUID())).rejects.toThrow(/deliveries_one_source/);
  });
});
