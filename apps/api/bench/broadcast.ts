// pnpm bench:broadcast — a 100 000-member broadcast to a local webhook receiver, measured on one
// embedded (durable) PostgreSQL with the server as its own process (node dist/main.js, role all):
//  1. messages/s: members reached / seconds from the first request to the last (target ≥ 5 000);
//  2. that rate divided by a bare undici loop posting the same Standard Webhooks-signed requests
//     (same body size, same headers, 32 in flight, keep-alive) to the same receiver: the median of
//     BENCH_BROADCAST_ROUNDS (default 3) interleaved rounds, which goes first alternating, each
//     round a new broadcast to the same members (target ≥ 0.8);
//  3. the time from the execute's 202 to the first request at the receiver (target ≤ 1 s);
//  4. the same members (BENCH_SLOW_MEMBERS, default all) to an endpoint that answers each request
//     after 1 s: messages/s at the default worker concurrency, and repeated webhook-ids (must be 0:
//     a slow provider never makes a claim look abandoned).
// Each round also prints the CPU per message of the server and of PostgreSQL (from /proc: what a
// message costs, less noisy than a rate on a shared machine).
// BENCH_POLICIES=1: the workspace has delivery policies that never bind (three caps, an all-day
// window; bench/support.ts), so every claim passes the policies' gate (target ≥ 0.75 then).
// The receiver runs in this process and only counts (and checks webhook-ids are unique). The
// members are written straight into `profiles` (set-based SQL) so the measure is the broadcast,
// not ingestion. Receiver, server and PostgreSQL share the machine's cores.
import pg from "pg";
import { bareLoop, median, policiesFromEnv, SIGNING_SECRET, startBenchServer, startReceiver, summaryLine } from "./support.ts";

const MEMBERS = Number(process.env.BENCH_MEMBERS ?? 100_000);
const SLOW_MEMBERS = Number(process.env.BENCH_SLOW_MEMBERS ?? MEMBERS);
/** Interleaved rounds of the broadcast and the bare loop (the median ratio is the figure). */
const ROUNDS = Number(process.env.BENCH_BROADCAST_ROUNDS ?? 3);
const line = (name: string, value: string, target: string, ok: boolean) => summaryLine(name, value, target, ok, 64);
/** How long the slow endpoint (`/slow`) takes to answer. */
const SLOW_MS = 1000;

async function main() {
  const receiver = startReceiver(SLOW_MS);
  const receiverUrl = await receiver.listen();
  const bench = await startBenchServer("bcast");
  const { workspaceId, admin } = bench;
  const url = bench.dbUrl;
  try {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const t = performance.now();
    await client.query(
      `INSERT INTO profiles (workspace_id, profile_id, traits)
       SELECT $1, 'member-' || i, jsonb_build_object('plan', 'pro', 'email', 'member-' || i || '@example.test', 'n', i)
       FROM generate_series(0, $2 - 1) i`,
      [workspaceId, MEMBERS],
    );
    await client.query("ANALYZE profiles");
    console.log(`members loaded: ${MEMBERS} in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    await admin("PUT", "/api/admin/providers", { channel: "Webhook", type: "Webhook", config: { signingSecret: SIGNING_SECRET } });
    const policies = await policiesFromEnv(bench);

    // Warm-up: a small broadcast (JIT, connections), then the measured one.
    const run = async (name: string, segmentDefinition: unknown, hook = "/hook") => {
      receiver.reset();
      const cpuBefore = bench.cpu();
      const selfBefore = process.cpuUsage();
      const started = performance.now();
      const res = await admin("POST", "/api/admin/broadcasts/execute", {
        broadcastName: name,
        segmentDefinition,
        messageTemplateDefinition: {
          type: "Webhook",
          url: `${receiverUrl}${hook}`,
          method: "POST",
          body: '{"user":"{{ user.id }}","plan":"{{ user.plan }}"}',
        },
      });
      const accepted = performance.now();
      // The status once a second, as an admin watching it would: each read counts the broadcast's
      // deliveries by status (65 ms at 100 000), and at 10 reads a second it took a quarter of the
      // database's time in the run it measures.
      for (;;) {
        const b = await admin("GET", `/api/admin/broadcasts/${res.broadcastId}`);
        if (["Completed", "Failed", "Cancelled"].includes(b.status)) {
          const cpu = bench.cpu();
          const per = (x: number) => `${((x * 1e6) / Math.max(1, receiver.state.count)).toFixed(0)} µs`;
          const self = process.cpuUsage(selfBefore);
          const cpuText = `server ${per(cpu.server - cpuBefore.server)}, PostgreSQL ${per(cpu.postgres - cpuBefore.postgres)}, this process (the receiver) ${per((self.user + self.system) / 1e6)}`;
          return { b, started, accepted, ...receiver.state, distinct: receiver.state.ids.size, cpuText };
        }
        await new Promise((r) => setTimeout(r, 1000));
      }
    };
    const warm = await run("warm-up", {
      entryNode: { type: "Trait", id: "t", path: "email", operator: { type: "Equals", value: "member-1@example.test" } },
      nodes: [],
    });
    console.log(`warm-up: ${warm.b.status}, ${warm.count} message(s)`);
    // Interleaved rounds, which goes first alternating: the figure is the median round's ratio.
    const rounds: { rate: number; bare: number; firstMs: number; once: boolean }[] = [];
    const measureBare = async () => {
      receiver.reset();
      const before = process.cpuUsage();
      const rate = await bareLoop(receiverUrl, MEMBERS);
      const used = process.cpuUsage(before);
      console.log(
        `bare loop: CPU per request of this process (the loop and the receiver) ${((used.user + used.system) / MEMBERS).toFixed(0)} µs`,
      );
      return rate;
    };
    for (let i = 0; i < ROUNDS; i++) {
      const bareFirst = i % 2 === 1;
      let bare = bareFirst ? await measureBare() : 0;
      const r = await run(`bench-${i + 1}`, { entryNode: { type: "Everyone", id: "all" }, nodes: [] });
      const seconds = (r.last - r.first) / 1000;
      console.log(
        `round ${i + 1}: broadcast ${r.b.status} counts ${JSON.stringify(r.b.counts)}; ${r.count} requests (${r.distinct} distinct webhook-ids, ${r.duplicates} repeats) in ${seconds.toFixed(2)} s`,
      );
      if (!bareFirst) bare = await measureBare();
      const rate = r.count / seconds;
      rounds.push({ rate, bare, firstMs: r.first - r.accepted, once: r.distinct === MEMBERS && r.b.counts.sent === MEMBERS });
      console.log(
        `round ${i + 1}: ${rate.toFixed(0)} messages/s, bare loop ${bare.toFixed(0)}/s, ratio ${(rate / bare).toFixed(2)}; CPU per message: ${r.cpuText}`,
      );
    }

    // The slow endpoint: the first SLOW_MEMBERS members (by id order, an indexed range).
    const slow = await run(
      "bench-slow",
      SLOW_MEMBERS >= MEMBERS
        ? { entryNode: { type: "Everyone", id: "all" }, nodes: [] }
        : {
            entryNode: { type: "Trait", id: "n", path: "n", operator: { type: "LessThan", value: SLOW_MEMBERS } },
            nodes: [],
          },
      "/slow",
    );
    const slowRate = slow.count / ((slow.last - slow.first) / 1000);
    console.log(
      `slow endpoint: ${slow.b.status} counts ${JSON.stringify(slow.b.counts)}; ${slow.count} requests (${slow.distinct} distinct, ${slow.duplicates} repeats)`,
    );
    await client.end();

    const ratios = rounds.map((x) => x.rate / x.bare);
    const ratio = median(ratios);
    const mid = rounds[ratios.indexOf(ratio)]!;
    const firstMs = Math.max(...rounds.map((x) => x.firstMs));
    console.log(`\n=== bench:broadcast (${policies.label}) ===`);
    line(`messages/s (${MEMBERS} members, webhook; the median round)`, mid.rate.toFixed(0), "≥ 5000", mid.rate >= 5000);
    line("bare undici loop, signed requests/s (that round)", mid.bare.toFixed(0), "—", true);
    line(
      `broadcast / bare loop (median of ${ROUNDS} rounds: ${ratios.map((x) => x.toFixed(2)).join(", ")})`,
      ratio.toFixed(2),
      `≥ ${policies.target}`,
      ratio >= policies.target,
    );
    line("execute 202 → first delivery (ms, slowest round)", firstMs.toFixed(0), "≤ 1000", firstMs <= 1000);
    line(
      "every member exactly once, every round",
      `${rounds.filter((x) => x.once).length}/${ROUNDS}`,
      `${ROUNDS}/${ROUNDS}`,
      rounds.every((x) => x.once),
    );
    line(`slow endpoint (${SLOW_MS} ms): messages/s (${slow.count})`, slowRate.toFixed(0), "—", true);
    line("slow endpoint: repeated webhook-ids", String(slow.duplicates), "0", slow.duplicates === 0 && slow.b.counts.sent === slow.count);
  } finally {
    await bench.stop();
    await receiver.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
