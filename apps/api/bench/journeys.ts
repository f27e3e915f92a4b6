// pnpm bench:journeys — the journey runtime (docs/journeys.md) on one embedded, durable PostgreSQL
// (track_commit_timestamp on, so the instant each run's move became visible can be read back),
// with the server as its own process (node dist/main.js) and the webhook receiver in this one,
// like bench:broadcast. N = BENCH_JOURNEY_USERS (default 100 000).
//  1. Entry at once. N profiles (set-based SQL) are members of a Trait segment (computed by the
//     engine before the clock starts). The journey entry → message → delay → segment split
//     (plan = pro) → message (one node per branch) is then started with one PUT, status Running:
//     that commit is the entering one (it records the runtime's entry job, which inserts the runs
//     after it). Figures: that commit (pg_xact_commit_timestamp) → the first message at the
//     receiver; messages/s of the first message node (N ÷ first → last request) and, after the
//     delay (BENCH_JOURNEY_DELAY_S, default 60), of the second (also bounded by how fast the
//     delays fall due, i.e. how the first node went), each over the messages/s of the bare undici
//     loop (bench/support.ts) to the same receiver. BENCH_JOURNEY_ROUNDS (default 3) interleaved
//     rounds, each a new journey for the same members, the bare loop before or after it
//     alternating; the figures are the median rounds' ratios (target ≥ 0.8 each; ≥ 0.75 with
//     BENCH_POLICIES=1, delivery policies configured but never binding, bench/support.ts). Each
//     round also prints the CPU per message (the whole journey: entry, moves, both nodes) of the
//     server and of PostgreSQL, from /proc. BENCH_JOURNEY_ROUNDS=0 skips this phase.
//  2. Spread timers. N runs of another journey (entry → delay → exit) are inserted set-based
//     (SQL), waiting at the delay, due at instants spread over 60 s starting a few seconds after
//     the insert commits. Lateness of each = commit of the move past the delay − due; also the
//     runtime's own figure (its clock when it took the batch − due, what the histogram
//     tidings_journey_timer_lateness_seconds observes). p50/p95/p99/max; target p99 ≤ 1 s.
//  3. Same instant. N such runs all due at one instant: due → the last one past the delay
//     (its commit). Target ≤ 10 s. Phases 2 and 3 also print the CPU per run moved.
//  4. Entry latency. Track events naming an EventEntryNode journey's event, one request each at a
//     steady 200/s for 10 s: the event's commit → its run's start. Target p95 ≤ 1 s.
// Receiver, server and PostgreSQL share the machine's cores, and other work on the machine skews
// every figure: the summary shows the 1-minute load average around each phase.
import os from "node:os";
import pg from "pg";
import { bareLoop, policiesFromEnv, SIGNING_SECRET, startBenchServer, startReceiver, summaryLine } from "./support.ts";
import { entryAtOnce, prepareEntry, printRounds, type Round, ROUNDS, roundOf } from "./journeys/entry.ts";
import { ENTRY_RATE, ENTRY_SECONDS, entryLatency } from "./journeys/entry-latency.ts";
import { SPREAD_MS, timers, timersJourney } from "./journeys/timers.ts";
import { log, N, type World } from "./journeys/world.ts";

async function main() {
  const receiver = startReceiver();
  const receiverUrl = await receiver.listen();
  const s = await startBenchServer("journeys", { postgresFlags: ["-c", "track_commit_timestamp=on"] });
  const db = new pg.Client({ connectionString: s.dbUrl });
  const load: Record<string, string> = {};
  const phase = async <T>(key: string, label: string, f: () => Promise<T>): Promise<T> => {
    log(`${label}…`);
    const before = os.loadavg()[0]!;
    const out = await f();
    load[key] = `${before.toFixed(1)}→${os.loadavg()[0]!.toFixed(1)}`;
    return out;
  };
  try {
    await db.connect();
    const w: World = { s, db, receiver, receiverUrl };
    await s.admin("PUT", "/api/admin/providers", { channel: "Webhook", type: "Webhook", config: { signingSecret: SIGNING_SECRET } });
    const policies = await policiesFromEnv(s);

    const prepared = await prepareEntry(w);
    // Interleaved rounds, the bare loop after the journey in odd rounds and before it in even ones.
    const rounds: Round[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const measureBare = () =>
        phase(`bare${i + 1}`, `bare loop: ${N} signed requests`, () => {
          receiver.reset();
          return bareLoop(receiverUrl, N);
        });
      const bareFirst = i % 2 === 1;
      let bare = bareFirst ? await measureBare() : 0;
      const e = await phase(`1.${i + 1}`, `(1) round ${i + 1}: ${N} users enter one journey with one commit`, () =>
        entryAtOnce(w, prepared, i + 1),
      );
      if (!bareFirst) bare = await measureBare();
      const round = roundOf(e, bare);
      rounds.push(round);
      log(`round ${i + 1}: ${round.text}`);
    }
    const journey = await timersJourney(w);
    const spread = await phase("2", `(2) ${N} timers due over ${SPREAD_MS / 1000} s`, () => timers(w, journey, "spread-", SPREAD_MS / N));
    const burst = await phase("3", `(3) ${N} timers due at one instant`, () => timers(w, journey, "burst-", 0));
    const entry = await phase("4", `(4) entry latency: ${ENTRY_RATE} track events/s for ${ENTRY_SECONDS} s`, () => entryLatency(w));

    const ms = (x: number) => `${(x * 1000).toFixed(0)} ms`;
    const line = (name: string, value: string, target: string, ok: boolean) => summaryLine(name, value, target, ok, 60);
    console.log(`\n=== bench:journeys (N = ${N}, ${policies.label}) ===`);
    if (rounds.length > 0) printRounds(rounds, policies.target, line);
    for (const [name, t] of [
      [`(2) ${N} timers over ${SPREAD_MS / 1000} s`, spread],
      [`(3) ${N} timers at one instant`, burst],
    ] as const) {
      const [p50, p95, p99] = t.commit;
      console.log(
        `${name}: ${t.moved} moved past the delay${t.left ? `, ${t.left} NEVER` : ""}; lateness (commit − due) p50 ${ms(p50!)}, p95 ${ms(p95!)}, ` +
          `p99 ${ms(p99!)}, max ${ms(t.commitMax)}; runtime's own (its clock − due) p50 ${ms(t.runtime[0]!)}, p99 ${ms(t.runtime[2]!)}, ` +
          `max ${ms(t.runtimeMax)}; histogram ≤ 1 s: ${(t.histogramWithin1s * 100).toFixed(1)} % of ${t.histogramCount}; ` +
          `CPU per run: server ${t.cpu.server.toFixed(0)} µs, PostgreSQL ${t.cpu.postgres.toFixed(0)} µs` +
          (t.insertLate ? "; WARNING: the insert committed after the first due time" : ""),
      );
    }
    line("(2) timer lateness p99 (s)", spread.commit[2]!.toFixed(3), "≤ 1", spread.left === 0 && spread.commit[2]! <= 1);
    line("(3) due → all past the delay (s)", burst.commitMax.toFixed(2), "≤ 10", burst.left === 0 && burst.commitMax <= 10);
    console.log(
      `(4) ${entry.total} EventEntryNode entries, one track request each at ${ENTRY_RATE}/s: event commit → run started ` +
        `p50 ${entry.p50.toFixed(0)} ms, p95 ${entry.p95.toFixed(0)} ms, p99 ${entry.p99.toFixed(0)} ms, max ${entry.max.toFixed(0)} ms`,
    );
    line("(4) entry latency p95 (s)", (entry.p95 / 1000).toFixed(3), "≤ 1", entry.p95 <= 1000);
    console.log(
      `load average (1 min) per phase: ${Object.entries(load)
        .map(([k, v]) => `${k} ${v}`)
        .join(", ")} on ${os.cpus().length} cores`,
    );
  } finally {
    await db.end().catch(() => {});
    await s.stop();
    await receiver.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
