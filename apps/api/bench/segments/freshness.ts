// Phases (b) and (e) of bench:segments (../segments.ts), freshness: a workspace with the 20 live
// segments under a steady /batch load (B_TRACKS or E_TRACKS track events per batch), and the time
// from each `plan` toggle's 204 to its membership change.
import { randomUUID } from "node:crypto";
import {
  B_IDENTIFIES,
  type Bench,
  createLiveSegments,
  createWorkspace,
  discardBacklog,
  liveSegments,
  dist,
  identifyEvent,
  log,
  r0,
  rand,
  secs,
  sendBatch,
  sleep,
  trackEvent,
  untilDrained,
} from "./support.ts";

const B_USERS = 20_000;
const B_LOOPS = 4;
const B_PERIOD_MS = 40;
const B_SECONDS = 20;
export const B_DRAIN_LIMIT_MS = 60_000;

interface Flip {
  userId: string;
  messageId: string;
  entered: boolean;
  sent: number;
  acked: number;
}

export async function freshness(bench: Bench, tracks: number) {
  const db = bench.admin;
  const ws = await createWorkspace(bench, `bench-freshness-${randomUUID().slice(0, 8)}`);
  const segments = await createLiveSegments(bench, ws);
  const pro = segments[0]!;
  const lastBought = segments[liveSegments().findIndex((l) => l.name === "last-bought-50")]!;
  const run = randomUUID().slice(0, 8);
  const users = Array.from({ length: B_USERS }, (_, i) => `b-${i}`);
  // Every user exists with plan "free" before the clock starts (and the server is warm).
  let s = Date.now();
  const warm = [...users];
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (let chunk = warm.splice(0, 100); chunk.length; chunk = warm.splice(0, 100)) {
        await sendBatch(
          bench,
          ws,
          chunk.map((u) => identifyEvent(`${run}-w-${u}`, u, "free")),
        );
      }
    }),
  );
  const drained = await untilDrained(db, ws.id);
  log(`(b) ${r0(B_USERS)} users identified in ${secs(Date.now() - s - drained)}, engine drained ${secs(drained)} later`);

  const flips: Flip[] = [];
  let seq = 0;
  let events = 0;
  let requests = 0;
  let maxBehind = 0;
  const inFlight: Promise<void>[] = [];
  const start = Date.now() + 50;
  const end = start + B_SECONDS * 1000;
  await Promise.all(
    Array.from({ length: B_LOOPS }, async (_, loop) => {
      const own = users.filter((_, i) => i % B_LOOPS === loop);
      let next = 0;
      for (let k = 0; ; k++) {
        const due = start + loop * (B_PERIOD_MS / B_LOOPS) + k * B_PERIOD_MS;
        if (due >= end) break;
        const wait = due - Date.now();
        if (wait > 0) await sleep(wait);
        else maxBehind = Math.max(maxBehind, -wait);
        const batch: unknown[] = [];
        const mine: Omit<Flip, "acked">[] = [];
        const sent = Date.now();
        for (let i = 0; i < B_IDENTIFIES; i++) {
          const userId = own[next++ % own.length]!;
          const messageId = `${run}-${seq++}`;
          // Users start "free": odd visits make them "pro".
          const entered = Math.floor((next - 1) / own.length) % 2 === 0;
          batch.push(identifyEvent(messageId, userId, entered ? "pro" : "free"));
          mine.push({ userId, messageId, entered, sent });
        }
        for (let i = 0; i < tracks; i++) batch.push(trackEvent(run, seq++, users[rand(users.length)]!));
        // Offered at the rate, whatever the server's answers take: a slow answer does not delay the next batch.
        inFlight.push(
          sendBatch(bench, ws, batch).then(() => {
            const acked = Date.now();
            for (const f of mine) flips.push({ ...f, acked });
            events += batch.length;
            requests++;
          }),
        );
      }
    }),
  );
  await Promise.all(inFlight);
  const sendSeconds = (Date.now() - start) / 1000;
  s = Date.now();
  // Bounded: an engine that cannot keep up leaves flips unapplied, counted as such below.
  let drain: number;
  try {
    drain = await untilDrained(db, ws.id, B_DRAIN_LIMIT_MS);
  } catch {
    drain = Number.POSITIVE_INFINITY;
  }
  log(
    `(b) sent ${r0(events)} events in ${r0(requests)} requests over ${sendSeconds.toFixed(1)} s (${r0(events / sendSeconds)} events/s, worst loop lag ${maxBehind} ms); engine drained ${secs(drain)} after the last 204`,
  );
  await sleep(200);
  const { rows: changes } = await db.query(
    `SELECT profile_id, entered, (extract(epoch FROM at) * 1000)::float8 AS at,
       (extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000)::float8 AS committed
     FROM segment_membership_changes WHERE workspace_id = $1 AND segment_id = $2 ORDER BY id`,
    [ws.id, pro.id],
  );
  const byUser = new Map<string, { entered: boolean; at: number; committed: number }[]>();
  for (const c of changes) {
    const l = byUser.get(c.profile_id) ?? [];
    if (l.length === 0) byUser.set(c.profile_id, l);
    l.push(c);
  }
  const { rows: evRows } = await db.query(
    `SELECT message_id, (extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000)::float8 AS committed
     FROM events WHERE workspace_id = $1 AND message_id = ANY($2)`,
    [ws.id, flips.map((f) => f.messageId)],
  );
  const eventCommit = new Map<string, number>(evRows.map((r) => [r.message_id, r.committed]));
  const latency: number[] = [];
  const visible: number[] = [];
  const serverSide: number[] = [];
  let negative = 0;
  let minRaw = 0;
  let missing = 0;
  let wrong = 0;
  for (const f of flips) {
    const c = byUser.get(f.userId)?.find((x) => x.at >= f.sent);
    if (!c) {
      // Not applied when the engine was given up on: later than anything measured.
      missing++;
      for (const l of [latency, visible, serverSide]) l.push(Number.POSITIVE_INFINITY);
      continue;
    }
    if (c.entered !== f.entered) wrong++;
    const raw = c.at - f.acked;
    if (raw < 0) negative++;
    minRaw = Math.min(minRaw, raw);
    latency.push(Math.max(0, raw));
    visible.push(Math.max(0, c.committed - f.acked));
    const ec = eventCommit.get(f.messageId);
    if (ec !== undefined) serverSide.push(c.committed - ec);
  }
  log(
    `(b) 204 → change.at: ${dist(latency)}; ${negative} negative (min ${r0(minRaw)} ms) clamped to 0; ${missing} missing, ${wrong} wrong direction`,
  );
  log(`(b) 204 → change committed: ${dist(visible)}`);
  log(`(b) event committed → change committed (server side): ${dist(serverSide)}`);
  // The same for a segment reading events: each change of `last-bought-50` (LastPerformed Bought,
  // amount >= 50) during the load, from the commit of the user's Bought event that caused it (its
  // last one committed before the change) to the change's commit. Both sides are tens of
  // thousands of rows: joined by hash (a workspace created after the tables were last analyzed
  // looks empty to the planner, which then joined them by nested loop: 394 s once).
  await db.query("BEGIN; SET LOCAL enable_nestloop = off");
  const { rows: eventLags } = await db.query<{ lag: number }>(
    `WITH bought AS (
       SELECT identity_id AS profile_id, pg_xact_commit_timestamp(xmin) AS t FROM events
       WHERE workspace_id = $1 AND type = 'track' AND event = 'Bought' AND received_at >= $3),
     changed AS (
       SELECT id, profile_id, pg_xact_commit_timestamp(xmin) AS t FROM segment_membership_changes
       WHERE workspace_id = $1 AND segment_id = $2 AND at >= $3)
     SELECT (extract(epoch FROM c.t - max(b.t)) * 1000)::float8 AS lag
     FROM changed c JOIN bought b ON b.profile_id = c.profile_id AND b.t <= c.t GROUP BY c.id, c.t`,
    [ws.id, lastBought.id, new Date(start)],
  );
  await db.query("COMMIT");
  const eventSegment = eventLags.map((r) => r.lag).filter((l) => l !== null);
  log(`(b) last-bought-50 (reads events): Bought committed → change committed (server side): ${dist(eventSegment)}`);
  let stopped = 0;
  if (!Number.isFinite(drain)) {
    stopped = await discardBacklog(db, ws.id);
    log(`(b) the engine's backlog was discarded in ${secs(stopped)}`);
  }
  return {
    stopped,
    latency,
    visible,
    serverSide,
    eventSegment,
    negative,
    minRaw,
    missing,
    wrong,
    flips: flips.length,
    eventsPerSec: events / sendSeconds,
    drain,
  };
}
