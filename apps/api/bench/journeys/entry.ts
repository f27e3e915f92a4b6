// bench:journeys, phase 1 (bench/journeys.ts): N members of a computed segment enter a journey
// with one commit; the rates of its two message nodes against the bare loop's, round by round.
import type { JourneyStats } from "@tidings/schema";
import { median } from "../support.ts";
import { delayNode, journeyDef, log, merged, messageNode, N, perfOf, secs, segment, template, trait, until, type World } from "./world.ts";

/** Interleaved rounds of phase 1 and the bare loop (the median ratios are the figures). */
export const ROUNDS = Number(process.env.BENCH_JOURNEY_ROUNDS ?? 3);
const DELAY_S = Number(process.env.BENCH_JOURNEY_DELAY_S ?? 60);

/** Phase 1's members and segments (computed before any clock starts), and a warm-up journey. */
export async function prepareEntry(w: World) {
  const { s, db, receiver } = w;
  let t = performance.now();
  await db.query(
    `INSERT INTO profiles (workspace_id, profile_id, traits)
     SELECT $1, 'member-' || i, jsonb_build_object('plan', CASE WHEN i % 2 = 0 THEN 'pro' ELSE 'std' END,
       'email', 'member-' || i || '@example.test', 'cohort', 'bench')
     FROM generate_series(0, $2 - 1) i`,
    [s.workspaceId, N],
  );
  await db.query("ANALYZE profiles");
  log(`profiles loaded: ${N} in ${secs(performance.now() - t)}`);
  t = performance.now();
  const entry = await segment(w, "bench-entry", trait("cohort", "bench"), N);
  const pro = await segment(w, "bench-pro", trait("plan", "pro"), Math.ceil(N / 2));
  log(`segments computed in ${secs(performance.now() - t)}`);

  // Warm-up: a one-member journey through the same path (entry job, advance, sends).
  const warm = await segment(w, "bench-warm", trait("email", "member-1@example.test"), 1);
  await s.admin("PUT", "/api/admin/journeys", {
    name: "bench-warm-up",
    status: "Running",
    definition: journeyDef(warm, [messageNode("hello", await template(w, "warm", "/warm"), "ExitNode")]),
  });
  await until(
    "warm-up message",
    () => receiver.path("/warm").count,
    (n) => n >= 1,
    30_000,
  );
  const templates = {
    first: await template(w, "first", "/first"),
    secondPro: await template(w, "second-pro", "/second-pro"),
    secondStd: await template(w, "second-std", "/second-std"),
  };
  return { entry, pro, templates };
}

/** Phase 1, one round: every member enters a new journey with one commit. */
export async function entryAtOnce(w: World, prepared: Awaited<ReturnType<typeof prepareEntry>>, round: number) {
  const { s, db, receiver } = w;
  const { templates } = prepared;
  const definition = journeyDef(prepared.entry, [
    messageNode("first", templates.first, "wait"),
    delayNode(DELAY_S, "split"),
    { id: "split", type: "SegmentSplitNode", segment: prepared.pro, trueChild: "second-pro", falseChild: "second-std" },
    messageNode("second-pro", templates.secondPro, "ExitNode"),
    messageNode("second-std", templates.secondStd, "ExitNode"),
  ]);
  receiver.reset();
  const cpuBefore = s.cpu();
  const sent = performance.now();
  const j = await s.admin("PUT", "/api/admin/journeys", { name: `bench-entry-${round}`, status: "Running", definition });
  const answered = performance.now();
  const { rows } = await db.query<{ ms: number }>(
    "SELECT extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000 AS ms FROM journeys WHERE workspace_id = $1 AND id = $2",
    [s.workspaceId, j.id],
  );
  const commit = perfOf(Number(rows[0]!.ms));
  log(`journey started (PUT answered in ${secs(answered - sent)}); waiting for ${N} first messages`);
  await until(
    "first messages",
    () => receiver.path("/first").count,
    (n) => n >= N,
    // Generous: the entry of N runs has been measured to grow with N² (see the report).
    120_000 + N * 15,
  );
  const firstNode = { ...receiver.path("/first") };
  log(`first messages: ${firstNode.count} in ${secs(firstNode.last - firstNode.first)}; waiting for the delay and the second messages`);
  const second = () => merged([receiver.path("/second-pro"), receiver.path("/second-std")]);
  await until(
    "second messages",
    () => second().count,
    (n) => n >= N,
    DELAY_S * 1000 + 120_000 + N * 3,
  );
  const secondNode = second();
  const cpuAfter = s.cpu();
  // The whole journey's cost (entry, moves, both message nodes) per message sent.
  const cpu = {
    server: (cpuAfter.server - cpuBefore.server) / (2 * N),
    postgres: (cpuAfter.postgres - cpuBefore.postgres) / (2 * N),
  };
  // Where the time went: runs entered (the entry job's clock), deliveries queued by the first
  // advance batches (created_at: their transaction's start).
  const { rows: phases } = await db.query<{ entered: number; queued_first: number; queued_last: number }>(
    `SELECT (SELECT extract(epoch FROM min(entered_at)) * 1000 FROM journey_runs WHERE workspace_id = $1 AND journey_id = $2) AS entered,
       extract(epoch FROM min(created_at)) * 1000 AS queued_first, extract(epoch FROM max(created_at)) * 1000 AS queued_last
     FROM deliveries WHERE workspace_id = $1 AND journey_id = $2 AND node_id = 'first'`,
    [s.workspaceId, j.id],
  );
  const p = phases[0]!;
  // A run moves on after its last message is sent; with delivery policies that can hold, only once
  // that message's mark wakes it: the stats once every run has completed (or after a minute).
  const readStats = () => s.admin("GET", `/api/admin/journeys/${j.id}/stats`);
  const stats = await until("runs completed", readStats, (st) => st.completed >= N, 60_000, 250).catch(async (err) => {
    log((err as Error).message);
    return readStats();
  });
  return {
    commit,
    answered,
    firstNode,
    secondNode,
    entered: perfOf(Number(p.entered)),
    queuedFirst: perfOf(Number(p.queued_first)),
    queuedLast: perfOf(Number(p.queued_last)),
    stats,
    cpu,
    pro: receiver.path("/second-pro").count,
    duplicates: receiver.state.duplicates,
  };
}

export interface Round {
  first: number;
  second: number;
  bare: number;
  toFirst: number;
  /** Every run completed, the split sent half to pro, every first message sent, no webhook-id repeated. */
  whole: boolean;
  text: string;
}

/** One round's figures: the message nodes' rates, the bare loop's, and where the time went. */
export function roundOf(e: Awaited<ReturnType<typeof entryAtOnce>>, bare: number): Round {
  const first = e.firstNode.count / ((e.firstNode.last - e.firstNode.first) / 1000);
  const second = e.secondNode.count / ((e.secondNode.last - e.secondNode.first) / 1000);
  const toFirst = e.firstNode.first - e.commit;
  const stats = e.stats as JourneyStats;
  const sentFirst = stats.nodes.find((n) => n.id === "first")?.sent;
  const whole = stats.completed === N && e.pro === Math.ceil(N / 2) && e.duplicates === 0 && sentFirst === N;
  const text =
    `first node ${first.toFixed(0)}/s (${(first / bare).toFixed(2)}×), second ${second.toFixed(0)}/s (${(second / bare).toFixed(2)}×), ` +
    `bare loop ${bare.toFixed(0)}/s; commit → runs entered ${secs(e.entered - e.commit)}, → first batch queued ` +
    `${secs(e.queuedFirst - e.commit)}, → last batch queued ${secs(e.queuedLast - e.commit)}, → first message ${secs(toFirst)}, ` +
    `→ last first message ${secs(e.firstNode.last - e.commit)} (PUT answered ${secs(e.answered - e.commit)} after its commit); ` +
    `runs completed / split pro / repeated webhook-ids ${stats.completed}/${e.pro}/${e.duplicates}; CPU per message (the whole ` +
    `journey): server ${(e.cpu.server * 1e6).toFixed(0)} µs, PostgreSQL ${(e.cpu.postgres * 1e6).toFixed(0)} µs`;
  return { first, second, bare, toFirst, whole, text };
}

/** Phase 1's figures: each round, and the medians against the target. */
export function printRounds(rounds: Round[], target: number, line: (name: string, value: string, target: string, ok: boolean) => void) {
  const firstRatios = rounds.map((r) => r.first / r.bare);
  const secondRatios = rounds.map((r) => r.second / r.bare);
  const [firstRatio, secondRatio] = [median(firstRatios), median(secondRatios)];
  const mid = rounds[firstRatios.indexOf(firstRatio)]!;
  const list = (xs: number[]) => xs.map((x) => x.toFixed(2)).join(", ");

  console.log(
    "(1) entry: the members of a computed segment enter with the commit of the journey's PUT (status Running);\n" +
      `    the runs are inserted after it by the runtime's entry job. Each whole journey ran to its end. ${ROUNDS} rounds:`,
  );
  for (const [i, r] of rounds.entries()) console.log(`    round ${i + 1}: ${r.text}`);
  line("(1) entering commit → first message (ms, slowest round)", Math.max(...rounds.map((r) => r.toFirst)).toFixed(0), "—", true);
  line(`(1) first message node: messages/s (${N}; the median round)`, mid.first.toFixed(0), "—", true);
  line("    bare undici loop, signed requests/s (that round)", mid.bare.toFixed(0), "—", true);
  line(`(1) first message node / bare loop (median: ${list(firstRatios)})`, firstRatio.toFixed(2), `≥ ${target}`, firstRatio >= target);
  line(`(1) second message node / bare loop (median: ${list(secondRatios)})`, secondRatio.toFixed(2), `≥ ${target}`, secondRatio >= target);
  line(
    "(1) rounds whose runs all completed, split right, no repeated id",
    `${rounds.filter((r) => r.whole).length}/${ROUNDS}`,
    `${ROUNDS}/${ROUNDS}`,
    rounds.every((r) => r.whole),
  );
}
