// bench:journeys, phase 4 (bench/journeys.ts): track events of an EventEntryNode journey's event
// at a steady rate; from each event's commit to its run's start.
import { messageNode, sleep, template, until, type World } from "./world.ts";

/** Track events per second, and for how long. */
export const ENTRY_RATE = 200;
export const ENTRY_SECONDS = 10;

/**
 * Phase 4: entry latency. Track events of an EventEntryNode journey's event, one per request at a
 * steady rate (ENTRY_RATE/s for ENTRY_SECONDS s, each from a new user): for each, the event's
 * commit (pg_xact_commit_timestamp of its row) → the commit that started its run.
 */
export async function entryLatency(w: World) {
  const { s, db } = w;
  const tpl = await template(w, "entry-latency", "/entry");
  const j = await s.admin("PUT", "/api/admin/journeys", {
    name: "entry-latency",
    status: "Running",
    definition: {
      entryNode: { type: "EventEntryNode", event: "Bench Entered", child: "hello" },
      nodes: [messageNode("hello", tpl, "ExitNode")],
      exitNode: { type: "ExitNode", id: "ExitNode" },
    },
  });
  const auth = `Basic ${Buffer.from(`${s.writeKey}:`).toString("base64")}`;
  const total = ENTRY_RATE * ENTRY_SECONDS;
  const start = performance.now();
  const sends: Promise<unknown>[] = [];
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / ENTRY_RATE;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    sends.push(
      fetch(`${s.base}/api/public/apps/track`, {
        method: "POST",
        headers: { authorization: auth, "content-type": "application/json" },
        body: JSON.stringify({ userId: `entrant-${i}`, event: "Bench Entered", messageId: `entry-${i}`, properties: { i } }),
      }).then((r) => r.text()),
    );
  }
  await Promise.all(sends);
  await until(
    "entry-latency runs",
    async () => Number((await db.query("SELECT count(*) AS n FROM journey_runs WHERE journey_id = $1", [j.id])).rows[0].n),
    (n) => n === total,
    60_000,
  );
  // The run's first commit is its insert: entered_at is the runtime's clock just before it.
  const { rows } = await db.query<{ ms: number }>(
    `SELECT extract(epoch FROM r.entered_at - pg_xact_commit_timestamp(e.xmin)) * 1000 AS ms
     FROM journey_runs r JOIN events e ON e.workspace_id = r.workspace_id AND e.message_id = r.event ->> 'messageId'
     WHERE r.journey_id = $1 ORDER BY 1`,
    [j.id],
  );
  const at = (q: number) => Number(rows[Math.min(rows.length - 1, Math.floor(q * rows.length))]!.ms);
  return { total, p50: at(0.5), p95: at(0.95), p99: at(0.99), max: Number(rows[rows.length - 1]!.ms) };
}
