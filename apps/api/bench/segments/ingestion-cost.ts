// Phase (c) of bench:segments (../segments.ts), ingestion cost of live segments: autocannon rounds of
// 100-event batches into a workspace with the 20 live segments and into one with none, alternating.
import { randomUUID } from "node:crypto";
import autocannon from "autocannon";
import {
  type Bench,
  createLiveSegments,
  createWorkspace,
  discardBacklog,
  identifyEvent,
  log,
  median,
  r0,
  ROUND_SECONDS,
  ROUNDS,
  rand,
  secs,
  untilDrained,
  type Workspace,
} from "./support.ts";

const C_USERS = 50_000;
const C_MAX_RATE = 60_000;
export const C_DRAIN_LIMIT_MS = 30_000;

function cBodies(prefix: string, count: number): string[] {
  const bodies: string[] = [];
  let n = 0;
  for (let b = 0; b < count; b++) {
    const batch = [];
    for (let i = 0; i < 100; i++, n++) {
      const userId = `c-${(n * 7919) % C_USERS}`;
      const messageId = `${prefix}-${n}`;
      batch.push(
        i % 10 === 0
          ? identifyEvent(messageId, userId, rand(3) ? "free" : "pro")
          : i % 10 <= 3
            ? { type: "track", userId, messageId, event: "Bought", properties: { amount: rand(100), currency: "EUR" } }
            : {
                type: "track",
                userId,
                messageId,
                event: "Item Viewed",
                properties: { sku: `sku-${n % 977}`, price: n % 100, currency: "EUR" },
                context: { ip: "10.0.0.1", library: { name: "bench", version: "1" } },
              },
      );
    }
    bodies.push(JSON.stringify({ batch, sentAt: new Date().toISOString() }));
  }
  return bodies;
}

async function batchRound(bench: Bench, ws: Workspace, seconds: number) {
  const db = bench.admin;
  const bodies = cBodies(randomUUID().slice(0, 8), Math.ceil((seconds * C_MAX_RATE) / 100));
  let next = 0;
  const result = await autocannon({
    url: bench.base,
    duration: seconds,
    connections: 16,
    requests: [
      {
        method: "POST",
        path: "/api/public/apps/batch",
        headers: { authorization: `Basic ${ws.writeKey}`, "content-type": "application/json" },
        setupRequest: (req) => ({ ...req, body: bodies[next++ % bodies.length] }),
      },
    ],
  });
  if (next > bodies.length) throw new Error("ran out of unique batch bodies; raise C_MAX_RATE");
  const { rows } = await db.query("SELECT count(*)::int AS n FROM segment_outbox WHERE workspace_id = $1", [ws.id]);
  // Bounded, so that a run ends: a round whose backlog outlives this is reported as such.
  let drainMs: number;
  try {
    drainMs = await untilDrained(db, ws.id, C_DRAIN_LIMIT_MS);
  } catch {
    drainMs = Number.POSITIVE_INFINITY;
    // So that the next round is not run alongside this one's engine work.
    await discardBacklog(db, ws.id);
  }
  return { eventsPerSec: (result["2xx"] * 100) / seconds, non2xx: result.non2xx, outboxLeft: rows[0].n as number, drainMs };
}

export async function ingestionCost(bench: Bench) {
  const live = await createWorkspace(bench, `bench-live-${randomUUID().slice(0, 8)}`);
  const none = await createWorkspace(bench, `bench-none-${randomUUID().slice(0, 8)}`);
  await createLiveSegments(bench, live);
  // Warm-up (profiles created, JIT), not measured.
  for (const ws of [live, none]) await batchRound(bench, ws, 3);
  const rounds: { live: Awaited<ReturnType<typeof batchRound>>; none: Awaited<ReturnType<typeof batchRound>> }[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const l = await batchRound(bench, live, ROUND_SECONDS);
    const n = await batchRound(bench, none, ROUND_SECONDS);
    rounds.push({ live: l, none: n });
    log(
      `(c) round ${i + 1}: live ${r0(l.eventsPerSec)} events/s (outbox left ${l.outboxLeft} rows, drained in ${secs(l.drainMs)}), none ${r0(n.eventsPerSec)} events/s (drained in ${secs(n.drainMs)}) → ${(l.eventsPerSec / n.eventsPerSec).toFixed(2)}`,
    );
  }
  const liveRate = median(rounds.map((r) => r.live.eventsPerSec));
  const noneRate = median(rounds.map((r) => r.none.eventsPerSec));
  // Counting the drain after the round as part of the round: the rate the engine sustains.
  // A drain given up on counts as the limit: an upper bound then.
  const gaveUp = rounds.some((r) => !Number.isFinite(r.live.drainMs));
  const sustained = median(
    rounds.map((r) => (r.live.eventsPerSec * ROUND_SECONDS) / (ROUND_SECONDS + Math.min(r.live.drainMs, C_DRAIN_LIMIT_MS) / 1000)),
  );
  const non2xx = rounds.reduce((n, r) => n + r.live.non2xx + r.none.non2xx, 0);
  return { rounds, liveRate, noneRate, ratio: liveRate / noneRate, sustained, gaveUp, non2xx };
}
