// Phase (d) of bench:segments (../segments.ts), window expiries: users identified with `lastSeen`
// dates that make them leave a `lastSeen Within 60 s` segment over 20 s, and how late they leave.
import { randomUUID } from "node:crypto";
import {
  type Bench,
  createWorkspace,
  def,
  dist,
  log,
  putSegment,
  sendBatch,
  sleep,
  trait,
  untilDrained,
  untilRecomputed,
} from "./support.ts";

export const D_USERS = 2000;
const D_LEAD_MS = 8000;
export const D_SPREAD_MS = 20_000;

export async function expiries(bench: Bench) {
  const db = bench.admin;
  const ws = await createWorkspace(bench, `bench-expiry-${randomUUID().slice(0, 8)}`);
  const seg = await putSegment(bench, ws, "seen-60s", def(trait("w", "lastSeen", { type: "Within", windowSeconds: 60 })));
  await untilRecomputed(bench, ws, seg.id, 60_000);
  const t0 = Date.now();
  const due = new Map<string, number>();
  const events: unknown[] = [];
  for (let i = 0; i < D_USERS; i++) {
    const userId = `d-${i}`;
    const lastSeen = t0 - 60_000 + D_LEAD_MS + Math.floor((D_SPREAD_MS * i) / D_USERS);
    due.set(userId, lastSeen + 60_000);
    events.push({ type: "identify", userId, messageId: `d-${t0}-${i}`, traits: { lastSeen: new Date(lastSeen).toISOString() } });
  }
  const chunks = Array.from({ length: D_USERS / 100 }, (_, i) => events.slice(i * 100, (i + 1) * 100));
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (let c = chunks.shift(); c; c = chunks.shift()) await sendBatch(bench, ws, c);
    }),
  );
  await untilDrained(db, ws.id);
  const { rows: entered } = await db.query("SELECT count(*)::int AS n FROM segment_memberships WHERE workspace_id = $1", [ws.id]);
  log(
    `(d) ${D_USERS} users sent in ${Date.now() - t0} ms, ${entered[0].n} members; first due at +${D_LEAD_MS} ms, last at +${D_LEAD_MS + D_SPREAD_MS} ms`,
  );
  const deadline = t0 + D_LEAD_MS + D_SPREAD_MS + 30_000;
  let rows: { profile_id: string; at: number; committed: number }[] = [];
  for (;;) {
    ({ rows } = await db.query(
      `SELECT profile_id, (extract(epoch FROM at) * 1000)::float8 AS at, (extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000)::float8 AS committed
       FROM segment_membership_changes WHERE workspace_id = $1 AND segment_id = $2 AND NOT entered`,
      [ws.id, seg.id],
    ));
    if (rows.length >= D_USERS || Date.now() > deadline) break;
    await sleep(500);
  }
  // Users with no exit row by the deadline count as never.
  const never = Array.from({ length: D_USERS - rows.length }, () => Number.POSITIVE_INFINITY);
  const lateness = [...rows.map((r) => r.at - due.get(r.profile_id)!), ...never];
  const committedLateness = [...rows.map((r) => r.committed - due.get(r.profile_id)!), ...never];
  log(`(d) exits seen ${rows.length}/${D_USERS}; lateness (at − due): ${dist(lateness)}; commit − due: ${dist(committedLateness)}`);
  return { lateness, committedLateness, exits: rows.length, entered: entered[0].n as number };
}
