// pnpm bench:segment-sizes — the size-history API (GET /api/admin/segments/{id}/sizes) on a
// segment of BENCH_SIZE_USERS (default 1 000 000) members: the server as its own process on an
// embedded PostgreSQL (bench/support.ts). The users are loaded in SQL and the segment is created
// through the admin API and recomputed by the engine (its first size record); then 30 days of
// hourly history are written into segment_sizes as the evaluations would have (one record per hour
// in which the size changed), and the API is asked for those 30 days, hourly (720 points) and
// daily (30 points), BENCH_SIZE_REQUESTS times each (default 200), one request at a time.
// Target: p95 ≤ 500 ms.
import pg from "pg";
import { startBenchServer, summaryLine as line } from "./support.ts";

const USERS = Number(process.env.BENCH_SIZE_USERS ?? 1_000_000);
const REQUESTS = Number(process.env.BENCH_SIZE_REQUESTS ?? 200);
const HOUR = 3_600_000;

const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;

async function main() {
  const bench = await startBenchServer("segment-sizes");
  const db = new pg.Client({ connectionString: bench.dbUrl });
  await db.connect();
  try {
    const { admin, workspaceId } = bench;
    let t = performance.now();
    await db.query(
      `INSERT INTO profiles (workspace_id, profile_id, traits)
       SELECT $1, 'u' || lpad(i::text, 7, '0'), jsonb_build_object('plan', 'pro') FROM generate_series(1, $2) i`,
      [workspaceId, USERS],
    );
    await db.query("ANALYZE profiles");
    console.log(`${USERS} users loaded in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    t = performance.now();
    const segment = await admin("PUT", "/api/admin/segments", {
      name: "Pro",
      definition: { entryNode: { type: "Trait", id: "p", path: "plan", operator: { type: "Equals", value: "pro" } }, nodes: [] },
    });
    for (;;) {
      const s = await admin("GET", `/api/admin/segments/${segment.id}`);
      if (s.memberCount === USERS) break;
      if (performance.now() - t > 600_000) throw new Error(`the segment has ${s.memberCount} members after 10 minutes`);
      await new Promise((r) => setTimeout(r, 500));
    }
    console.log(`segment recomputed: ${USERS} members in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    // 30 days of hourly history before the hour of the recompute.
    const now = Math.floor(Date.now() / HOUR) * HOUR;
    await db.query(
      `INSERT INTO segment_sizes (workspace_id, segment_id, hour, size)
       SELECT $1, $2, to_timestamp(($3::float8 - h * 3600000.0) / 1000), (($4::bigint * (720 - h)) / 720)::int FROM generate_series(1, 720) h
       ON CONFLICT DO NOTHING`,
      [workspaceId, segment.id, now, USERS],
    );
    const measure = async (interval: string) => {
      const times: number[] = [];
      for (let i = 0; i < REQUESTS; i++) {
        const started = performance.now();
        const body = await admin("GET", `/api/admin/segments/${segment.id}/sizes?interval=${interval}&from=${Date.now() - 30 * 24 * HOUR}`);
        times.push(performance.now() - started);
        if (i === 0) console.log(`${interval}: ${body.points.length} points, the last ${JSON.stringify(body.points.at(-1))}`);
      }
      return times;
    };
    const hourly = await measure("hour");
    const daily = await measure("day");
    console.log("\n=== bench:segment-sizes ===");
    for (const [name, xs] of [
      ["30 days hourly (720 points)", hourly],
      ["30 days daily (30 points)", daily],
    ] as const) {
      const p95 = quantile(xs, 0.95);
      line(`size history of ${USERS} members, ${name}, p95 (ms)`, p95.toFixed(1), "≤ 500", p95 <= 500, 60);
      line(`  median (ms)`, quantile(xs, 0.5).toFixed(1), "—", true, 60);
    }
  } finally {
    await db.end();
    await bench.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
