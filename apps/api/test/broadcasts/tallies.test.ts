// A running broadcast's counts come from its tallies (messaging/tallies.ts), which every statement
// changing its deliveries adds to in the same statement. So in any snapshot the tallies add up to
// the deliveries counted by status: checked over and over while two workspaces with the same user
// ids run broadcasts through every change there is (queued; claimed; skipped at the claim;
// held and released by a cap; failed; retried; cancelled while queued or held).
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { identify, type SegmentWorld, segmentWorld } from "../segments/support.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { broadcastEnd, getBroadcast, plan, waitFor } from "./support.ts";

let t: TestApp;
let receiver: Receiver;
/** How often a (path, user) pair was answered 500 so far: `retry` users get one. */
const answered = new Map<string, number>();

beforeAll(async () => {
  receiver = await startReceiver(({ path, body }, res) => {
    const user = JSON.parse(body).user as string;
    const seen = answered.get(`${path}:${user}`) ?? 0;
    answered.set(`${path}:${user}`, seen + 1);
    if (user === "fail") res.writeHead(400).end();
    else if (user === "retry" && seen === 0) res.writeHead(500).end();
    else res.writeHead(200).end();
  });
  t = await createTestApp({ outboundAllowedHosts: ["127.0.0.1"] });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

const USERS = ["ann", "bob", "cy", "fail", "retry", "quit"];

/** A workspace with USERS (plan pro), `quit` unsubscribed from an OptOut group, and `policies`. */
async function world(policies: Record<string, unknown>) {
  const w = await segmentWorld(t);
  await w.send(USERS.map((u) => identify(u, { plan: "pro" }, Date.now() - 1000)));
  const group = await w.admin("PUT", "/api/admin/subscription-groups", { name: "news", channel: "Webhook", type: "OptOut" });
  await w.admin("PUT", `/api/admin/subscription-groups/${group.id}/assignments`, { unsubscribe: ["quit"] });
  await w.admin("PUT", "/api/admin/policies", policies);
  let n = 0;
  const broadcast = async (path: string) =>
    (
      await w.admin("POST", "/api/admin/broadcasts/execute", {
        broadcastName: `b-${n++}`,
        segmentDefinition: plan("pro"),
        subscriptionGroupId: group.id,
        messageTemplateDefinition: { type: "Webhook", url: `${receiver.url}${path}`, method: "POST", body: '{"user":"{{ user.id }}"}' },
      })
    ).broadcastId as string;
  return { w, broadcast };
}

const COUNTS = `count(*) FILTER (WHERE d.status = 'Sent')::int AS sent, count(*) FILTER (WHERE d.status = 'Failed')::int AS failed,
  count(*) FILTER (WHERE d.status = 'Skipped')::int AS skipped, count(*) FILTER (WHERE d.status = 'Deferred')::int AS deferred`;

/** In one snapshot: the tallies summed, and the deliveries counted, of every broadcast not completed. */
async function snapshot(pool: pg.Pool, workspaces: string[]) {
  const c = await pool.connect();
  try {
    await c.query("BEGIN ISOLATION LEVEL REPEATABLE READ");
    const tallied = await c.query(
      `SELECT workspace_id, broadcast_id, sum(total)::int AS total, sum(sent)::int AS sent, sum(failed)::int AS failed,
         sum(skipped)::int AS skipped, sum(deferred)::int AS deferred
       FROM broadcast_tallies WHERE workspace_id = ANY($1::uuid[]) GROUP BY 1, 2 ORDER BY 1, 2`,
      [workspaces],
    );
    const counted = await c.query(
      `SELECT d.workspace_id, d.broadcast_id, count(*)::int AS total, ${COUNTS}
       FROM deliveries d JOIN broadcasts b ON b.workspace_id = d.workspace_id AND b.id = d.broadcast_id
       WHERE d.workspace_id = ANY($1::uuid[]) AND b.final_counts IS NULL GROUP BY 1, 2 ORDER BY 1, 2`,
      [workspaces],
    );
    await c.query("COMMIT");
    return { tallied: tallied.rows, counted: counted.rows };
  } finally {
    c.release();
  }
}

/** Takes snapshots until stopped: how many, how many had tallies, and the first that disagreed. */
function watch(workspaces: string[]) {
  let running = true;
  const seen = { checks: 0, withTallies: 0, disagreed: undefined as unknown };
  const loop = (async () => {
    while (running) {
      const s = await snapshot(t.ctx.db.pool, workspaces).catch((err) => ({ tallied: [err.message], counted: [] }));
      seen.checks++;
      if (s.tallied.length > 0) seen.withTallies++;
      if (seen.disagreed === undefined && JSON.stringify(s.tallied) !== JSON.stringify(s.counted)) seen.disagreed = s;
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  return async () => {
    running = false;
    await loop;
    return seen;
  };
}

const countsOf = (w: SegmentWorld, id: string) =>
  t.ctx.db.pool
    .query(`SELECT count(*)::int AS total, ${COUNTS} FROM deliveries d WHERE workspace_id = $1 AND broadcast_id = $2`, [w.ws.id, id])
    .then((r) => r.rows[0]);

describe("broadcast counts kept as tallies", () => {
  it("add up to the deliveries in every snapshot, through every change, in two workspaces with the same users", async () => {
    // a: a cap of one per 4 s, so a second broadcast is held, then released. b: a window that is
    // never open now, so everything is held, then cancelled.
    const a = await world({ frequencyCaps: [{ name: "one per 4 s", limit: 1, window: { seconds: 4 } }] });
    const b = await world({ sendWindows: [{ name: "never now", days: ["Mon"], from: "00:00", to: "00:01" }] });
    const stop = watch([a.w.ws.id, b.w.ws.id]);

    const first = await a.broadcast("/a1");
    const held = await b.broadcast("/b1");
    const firstEnd = await broadcastEnd(a.w, first);
    // quit: skipped at the claim; fail: failed; retry: queued again, then sent.
    expect(firstEnd.counts).toEqual({ audience: 6, sent: 4, failed: 1, skipped: 1, pending: 0, deferred: 0 });
    expect(answered.get("/a1:retry")).toBe(2);

    const second = await a.broadcast("/a2");
    const heldNow = await waitFor(
      () => getBroadcast(a.w, second),
      // Every pending message held (one may still be in flight when the first is held).
      (x) => x.counts.deferred > 0 && x.counts.deferred === x.counts.pending,
    );
    expect(heldNow.counts).toMatchObject({ audience: 6, deferred: heldNow.counts.pending });
    expect(heldNow.counts.deferred).toBeGreaterThan(0);
    const secondEnd = await broadcastEnd(a.w, second, 25_000);
    expect(secondEnd.counts).toEqual({ audience: 6, sent: 4, failed: 1, skipped: 1, pending: 0, deferred: 0 });

    const heldCounts = await waitFor(
      () => getBroadcast(b.w, held),
      (x) => x.counts.deferred === 5,
    );
    expect(heldCounts.counts).toEqual({ audience: 6, sent: 0, failed: 0, skipped: 1, pending: 5, deferred: 5 });
    expect((await b.w.admin("POST", `/api/admin/broadcasts/${held}/cancel`)).counts).toEqual({
      audience: 6,
      sent: 0,
      failed: 0,
      skipped: 6,
      pending: 0,
      deferred: 0,
    });

    // Cancelled while queued (b's window lifted): a broadcast paced at one a second, cancelled after its first message.
    await b.w.admin("PUT", "/api/admin/policies", {});
    const slow = await b.w.admin("POST", "/api/admin/broadcasts/execute", {
      broadcastName: "slow",
      segmentDefinition: plan("pro"),
      rateLimitPerSecond: 1,
      messageTemplateDefinition: { type: "Webhook", url: `${receiver.url}/b2`, method: "POST", body: '{"user":"{{ user.id }}"}' },
    });
    await waitFor(
      () => getBroadcast(b.w, slow.broadcastId),
      (x) => x.counts.sent > 0,
    );
    const cancelled = await b.w.admin("POST", `/api/admin/broadcasts/${slow.broadcastId}/cancel`);
    const settled = await waitFor(
      () => getBroadcast(b.w, slow.broadcastId),
      (x) => x.counts.pending === 0,
    );
    expect(cancelled.status).toBe("Cancelled");
    const counted = await countsOf(b.w, slow.broadcastId);
    expect(settled.counts).toMatchObject({
      audience: 6,
      sent: counted.sent,
      failed: counted.failed,
      skipped: counted.skipped,
      deferred: 0,
    });
    expect(counted.skipped).toBeGreaterThan(0);

    const seen = await stop();
    expect(seen.disagreed).toBeUndefined();
    expect(seen.withTallies).toBeGreaterThan(10);
    // Completed broadcasts keep their counts with them; their tallies are gone.
    const left = await t.ctx.db.pool.query("SELECT DISTINCT broadcast_id FROM broadcast_tallies WHERE workspace_id = ANY($1::uuid[])", [
      [a.w.ws.id, b.w.ws.id],
    ]);
    expect(left.rows.map((r) => r.broadcast_id).sort()).toEqual([held, slow.broadcastId].sort());
  }, 90_000);
});
