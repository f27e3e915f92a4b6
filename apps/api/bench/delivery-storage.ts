// pnpm bench:delivery-storage — what PostgreSQL spends per delivery on the send path's rows, as they
// are stored today and as they would be if a delivery were written once (issue 41: whether fewer
// row writes could take the send path to 0.8× the bare loop). No server, no HTTP: one connection
// drives each variant's statements over N members (BENCH_MEMBERS, default 100 000) in chunks of
// 2 000, and the figures are PostgreSQL's CPU per delivery (every backend and the postmaster's
// reaped children, from /proc) and the statements' wall time per phase. BENCH_ROUNDS (default 3)
// interleaved rounds, each variant a new broadcast of the same members; medians printed.
//  today    the send path's own claim and mark (messaging/claims.ts, marks.ts), after an insert of
//           the queueing statement's shape: each delivery queued (a row, Queued), claimed (Sending)
//           and marked (Sent, its rendered body), then VACUUM;
//           three row versions, each in every index of `deliveries`.
//  once     a prototype, here only: a broadcast's audience as a narrow snapshot (its delivery ids
//           chosen there), claimed a range at a time (one lease row per chunk), each delivery
//           inserted once, with its outcome, when it is marked. Queued and Sending deliveries would
//           then not be rows a reader sees, which is an outside change, so it is measured, not built.
//           It leaves out the claim's subscription checks and a broadcast's tallies: a floor.
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { readFileSync } from "node:fs";
import pg from "pg";
import { startEmbeddedPostgres } from "../src/db/embedded.ts";
import { migrate } from "../src/db/migrate.ts";
import { inTransaction } from "../src/db/transaction.ts";
import { claimDeliveries } from "../src/messaging/claims.ts";
import { markDeliveries } from "../src/messaging/marks.ts";
import { median, postgresCpu } from "./support.ts";

const N = Number(process.env.BENCH_MEMBERS ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** The senders' largest claim (send-chunk.ts MAX_CHUNK). */
const CHUNK = 2000;

type Phases = Record<string, number>;
interface Figures {
  /** PostgreSQL CPU µs per delivery. */
  cpu: number;
  /** Wall µs per delivery, by phase. */
  phases: Phases;
}

/** A rendered webhook as the mark stores it. */
const rendered = (userId: string) => ({ url: "http://127.0.0.1:9/hook", method: "POST", body: `{"user":"${userId}","plan":"pro"}` });

async function timed<T>(phases: Phases, name: string, f: () => Promise<T>): Promise<T> {
  const t = performance.now();
  const out = await f();
  phases[name] = (phases[name] ?? 0) + (performance.now() - t);
  return out;
}

/** Today's rows: queued, claimed and marked by the send path's statements. */
async function today(db: pg.Pool, ws: string, phases: Phases) {
  const b = randomUUID();
  await timed(phases, "queue", () =>
    db.query(
      `INSERT INTO deliveries (workspace_id, id, user_id, channel, broadcast_id, status, due_at)
       SELECT $1, gen_random_uuid(), 'member-' || i, 'Webhook', $2, 'Queued', now() FROM generate_series(1, $3) i ON CONFLICT DO NOTHING`,
      [ws, b, N],
    ),
  );
  await db.query("ANALYZE deliveries");
  const spec = { workspaceId: ws, stream: { column: "broadcast_id" as const, id: b }, limit: CHUNK, leaseSeconds: 30, contactTraits: {} };
  for (;;) {
    const c = await timed(phases, "claim", () => claimDeliveries(db, spec));
    if (c.picked === 0) break;
    const marks = c.toSend.map((x) => ({
      id: x.id,
      attempts: x.attempts,
      outcome: { status: "sent" as const },
      contact: null,
      rendered: rendered(x.userId),
    }));
    await timed(phases, "mark", () => markDeliveries(db, ws, marks));
  }
  await timed(phases, "vacuum", () => db.query("VACUUM deliveries"));
}

/** The prototype: an audience snapshot claimed by ranges, each delivery written once at its mark. */
async function once(db: pg.Pool, ws: string, phases: Phases) {
  const b = randomUUID();
  await timed(phases, "queue", () =>
    db.query(`INSERT INTO bench_once_audience SELECT $1, $2, i, gen_random_uuid(), 'member-' || i FROM generate_series(1, $3) i`, [
      ws,
      b,
      N,
    ]),
  );
  await db.query("ANALYZE bench_once_audience");
  for (let first = 1; first <= N; first += CHUNK) {
    const last = first + CHUNK - 1;
    const rows = await timed(phases, "claim", async () => {
      const c = await db.connect();
      try {
        return await inTransaction(c, async () => {
          await c.query(`INSERT INTO bench_once_leases VALUES ($1, $2, $3, $4, now() + interval '30 seconds')`, [ws, b, first, last]);
          const { rows } = await c.query<{ id: string; user_id: string; traits: unknown }>(
            `SELECT a.id, a.user_id, p.traits FROM bench_once_audience a
             LEFT JOIN LATERAL (SELECT traits FROM profiles WHERE workspace_id = a.workspace_id AND profile_id = a.user_id LIMIT 1) p ON true
             WHERE a.workspace_id = $1 AND a.broadcast_id = $2 AND a.seq BETWEEN $3 AND $4
               AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.workspace_id = a.workspace_id AND d.id = a.id)`,
            [ws, b, first, last],
          );
          return rows;
        });
      } finally {
        c.release();
      }
    });
    const marks = JSON.stringify(rows.map((r) => ({ id: r.id, user_id: r.user_id, rendered: rendered(r.user_id) })));
    await timed(phases, "mark", () =>
      db.query(
        `WITH m AS (INSERT INTO deliveries (workspace_id, id, user_id, channel, broadcast_id, status, rendered, sent_at, attempts)
           SELECT $1, m.id, m.user_id, 'Webhook', $2, 'Sent', m.rendered, now(), 1
           FROM jsonb_to_recordset($4::jsonb) AS m(id uuid, user_id text, rendered jsonb) ON CONFLICT DO NOTHING)
         DELETE FROM bench_once_leases WHERE workspace_id = $1 AND broadcast_id = $2 AND first = $3`,
        [ws, b, first, marks],
      ),
    );
  }
  await timed(phases, "vacuum", () => db.query("VACUUM deliveries, bench_once_audience"));
}

async function main() {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "tidings-bench-delivery-storage-"));
  const server = await startEmbeddedPostgres({ dataDir });
  const url = server.urlFor("postgres");
  const db = new pg.Pool({ connectionString: url, max: 1 });
  try {
    await migrate(url);
    const postmaster = Number(readFileSync(path.join(dataDir, "pg", "postmaster.pid"), "utf8").split("\n")[0]);
    const ws = randomUUID();
    await db.query(`INSERT INTO workspaces (id, name, updated_at) VALUES ($1, 'bench', now())`, [ws]);
    await db.query(
      `INSERT INTO profiles (workspace_id, profile_id, traits)
       SELECT $1, 'member-' || i, jsonb_build_object('email', 'member' || i || '@example.com', 'plan', 'pro', 'n', i) FROM generate_series(1, $2) i`,
      [ws, N],
    );
    await db.query("ANALYZE profiles");
    await db.query(`CREATE TABLE bench_once_audience (workspace_id uuid NOT NULL, broadcast_id uuid NOT NULL, seq int NOT NULL, id uuid NOT NULL,
        user_id text NOT NULL, PRIMARY KEY (workspace_id, broadcast_id, seq));
      CREATE TABLE bench_once_leases (workspace_id uuid NOT NULL, broadcast_id uuid NOT NULL, first int NOT NULL, last int NOT NULL,
        lease_until timestamptz NOT NULL, PRIMARY KEY (workspace_id, broadcast_id, first))`);
    const variants = { today, once };
    const results: Record<keyof typeof variants, Figures[]> = { today: [], once: [] };
    for (let round = 0; round < ROUNDS; round++) {
      const order = (round % 2 === 0 ? ["today", "once"] : ["once", "today"]) as (keyof typeof variants)[];
      for (const name of order) {
        const phases: Phases = {};
        const before = postgresCpu(postmaster);
        await variants[name](db, ws, phases);
        const cpu = ((postgresCpu(postmaster) - before) * 1e6) / N;
        for (const k of Object.keys(phases)) phases[k] = (phases[k]! * 1000) / N;
        results[name].push({ cpu, phases });
        const shown = Object.entries(phases)
          .map(([k, v]) => `${k} ${v.toFixed(1)}`)
          .join(", ");
        console.log(`round ${round + 1} ${name}: PostgreSQL CPU ${cpu.toFixed(1)} µs a delivery; wall µs a delivery: ${shown}`);
      }
    }
    const cpuOf = (name: keyof typeof variants) => median(results[name].map((r) => r.cpu));
    const phaseOf = (name: keyof typeof variants, phase: string) => median(results[name].map((r) => r.phases[phase] ?? 0));
    console.log(`\n=== bench:delivery-storage (${N} deliveries, chunks of ${CHUNK}, medians of ${ROUNDS} rounds) ===`);
    for (const name of ["today", "once"] as const) {
      const phases = ["queue", "claim", "mark", "vacuum"].map((p) => `${p} ${phaseOf(name, p).toFixed(1)}`).join(", ");
      console.log(`${name.padEnd(6)} PostgreSQL CPU ${cpuOf(name).toFixed(1).padStart(6)} µs a delivery (wall µs: ${phases})`);
    }
    console.log(`written once ÷ today, PostgreSQL CPU: ${(cpuOf("once") / cpuOf("today")).toFixed(2)}`);
  } finally {
    await db.end();
    await server.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
