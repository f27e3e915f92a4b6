// pnpm bench:policies — what delivery policies cost and how they release, on one embedded
// PostgreSQL with the server as its own process (bench/support.ts), a webhook receiver here:
//  1. throughput: a broadcast to BENCH_POLICY_MEMBERS (default 50 000) with three frequency caps
//     and a send window active, none binding, ÷ the same broadcast without policies — interleaved,
//     BENCH_POLICY_ROUNDS rounds (default 5; which goes first alternates), median (target ≥ 0.9);
//  2. a release: BENCH_RELEASE_MEMBERS (default 100 000) messages Deferred by a send window that
//     opens at the next full minute, paced by a Webhook provider rate of BENCH_RELEASE_RATE/s
//     (default 1 000): the busiest second after the opening (target ≤ the rate) and the whole
//     release against the ideal (messages ÷ rate; target within 10 %);
//  3. lateness: 2 000 users each over a "1 per 15 s" cap — each deferred message's arrival minus
//     its notBefore, p99 (target ≤ 5 s).
// BENCH_POLICY_PARTS=release (or throughput, lateness; comma-separated) runs only those parts.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import pg from "pg";
import { median, NON_BINDING_POLICIES, SIGNING_SECRET, startBenchServer, summaryLine as line } from "./support.ts";

const MEMBERS = Number(process.env.BENCH_POLICY_MEMBERS ?? 50_000);
const RELEASE = Number(process.env.BENCH_RELEASE_MEMBERS ?? 100_000);
// 1 000/s: above every documented provider rate but FCM's (docs/policies.md). At 5 000/s, this
// 2-core machine, running the receiver and PostgreSQL too, sends about 4 000/s: the machine, not the
// pacing, would be measured.
const RATE = Number(process.env.BENCH_RELEASE_RATE ?? 1_000);
const LATE_USERS = 2_000;
const CAP_SECONDS = 15;
/** Which parts run (default all; e.g. BENCH_POLICY_PARTS=release while working on one). */
/** Interleaved rounds of the throughput comparison (the median is the figure). */
const ROUNDS = Number(process.env.BENCH_POLICY_ROUNDS ?? 5);
const PARTS = new Set((process.env.BENCH_POLICY_PARTS ?? "throughput,release,lateness").split(","));

/** A receiver remembering, per path, when each webhook-id first arrived (Date.now()). */
function receiver() {
  const paths = new Map<string, Map<string, number>>();
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const p = (req.url ?? "/").split("?")[0]!;
      const m = paths.get(p) ?? new Map<string, number>();
      paths.set(p, m);
      const id = String(req.headers["webhook-id"]);
      if (!m.has(id)) m.set(id, Date.now());
      res.writeHead(200).end();
    });
  });
  return {
    at: (p: string) => paths.get(p) ?? new Map<string, number>(),
    listen: () =>
      new Promise<string>((r) => server.listen(0, "127.0.0.1", () => r(`http://127.0.0.1:${(server.address() as AddressInfo).port}`))),
    close: () => new Promise((r) => server.close(r)),
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;
const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);

async function main() {
  const hooks = receiver();
  const url = await hooks.listen();
  const bench = await startBenchServer("policies");
  const { admin, workspaceId } = bench;
  const db = new pg.Client({ connectionString: bench.dbUrl });
  await db.connect();
  try {
    await db.query(
      `INSERT INTO profiles (workspace_id, profile_id, traits)
       SELECT $1, 'member-' || i, jsonb_build_object('n', i) FROM generate_series(0, $2 - 1) i`,
      [workspaceId, Math.max(MEMBERS, RELEASE)],
    );
    await db.query("ANALYZE profiles");
    await admin("PUT", "/api/admin/providers", { channel: "Webhook", type: "Webhook", config: { signingSecret: SIGNING_SECRET } });
    let n = 0;
    const below = (k: number) => ({
      entryNode: { type: "Trait", id: "n", path: "n", operator: { type: "LessThan", value: k } },
      nodes: [],
    });
    const execute = async (path: string, members: number, extra: Record<string, unknown> = {}) =>
      (
        await admin("POST", "/api/admin/broadcasts/execute", {
          broadcastName: `b-${n++}`,
          segmentDefinition: below(members),
          messageTemplateDefinition: { type: "Webhook", url: `${url}${path}`, method: "POST", body: '{"user":"{{ user.id }}"}' },
          ...extra,
        })
      ).broadcastId as string;
    const count = async (id: string, statuses: string[]) =>
      Number(
        (
          await db.query("SELECT count(*) AS n FROM deliveries WHERE workspace_id = $1 AND broadcast_id = $2 AND status::text = ANY($3)", [
            workspaceId,
            id,
            statuses,
          ])
        ).rows[0].n,
      );
    const until = async (check: () => Promise<boolean>, ms: number, what: string) => {
      const deadline = Date.now() + ms;
      while (!(await check())) {
        if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
        await sleep(100);
      }
    };

    const results: [string, string, string, boolean][] = [];

    // 1. Throughput with rules that never bind, against none.
    if (PARTS.has("throughput")) {
      const none = { frequencyCaps: [], sendWindows: [] };
      const rules = NON_BINDING_POLICIES;
      await admin("PUT", "/api/admin/policies", none);
      const warm = await execute("/warm", 100);
      await until(async () => (await count(warm, ["Sent"])) === 100, 60_000, "warm-up");
      const rate = async (policies: unknown, path: string) => {
        await admin("PUT", "/api/admin/policies", policies);
        await execute(path, MEMBERS);
        await until(async () => hooks.at(path).size >= MEMBERS, 300_000, `${path} sent`);
        const times = [...hooks.at(path).values()];
        return MEMBERS / ((Math.max(...times) - Math.min(...times)) / 1000);
      };
      const ratios: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        // Alternate which goes first (ABBA): the second of a pair meets the first's fresh history and
        // dead rows, and each side should meet them as often.
        let plain: number, capped: number;
        if (round % 2 === 0) {
          plain = await rate(none, `/plain-${round}`);
          capped = await rate(rules, `/capped-${round}`);
        } else {
          capped = await rate(rules, `/capped-${round}`);
          plain = await rate(none, `/plain-${round}`);
        }
        console.log(
          `round ${round + 1}: without policies ${plain.toFixed(0)}/s, with ${capped.toFixed(0)}/s, ratio ${(capped / plain).toFixed(2)}`,
        );
        ratios.push(capped / plain);
      }
      const ratio = median(ratios);
      results.push(["3 caps + a window, none binding ÷ no policies", ratio.toFixed(2), "≥ 0.9", ratio >= 0.9]);
    }

    // 2. A release at a window's opening, paced by the provider rate.
    if (PARTS.has("release")) {
      const opening = Math.ceil((Date.now() + 60_000) / 60_000) * 60_000;
      await admin("PUT", "/api/admin/policies", {
        sendWindows: [{ name: "from the opening", from: hhmm(opening), to: hhmm(opening + 3 * 3600_000) }],
        providerRates: [{ provider: "Webhook", perSecond: RATE }],
      });
      const held = await execute("/release", RELEASE);
      await until(
        async () => (await count(held, ["Deferred"])) === RELEASE,
        opening - Date.now() - 1000,
        "every message deferred before the opening",
      );
      console.log(`release: ${RELEASE} deferred, ${((opening - Date.now()) / 1000).toFixed(0)} s before the opening`);
      await until(async () => hooks.at("/release").size >= RELEASE, 600_000, "the release");
      const arrivals = [...hooks.at("/release").values()];
      const perSecond: number[] = [];
      for (const t of arrivals) {
        const second = Math.floor((t - opening) / 1000);
        if (second >= 0) perSecond[second] = (perSecond[second] ?? 0) + 1;
      }
      console.log(`release, messages per second from the opening: ${Array.from(perSecond, (n) => n ?? 0).join(" ")}`);
      const busiest = Math.max(...perSecond.filter((n) => n !== undefined));
      const took = (Math.max(...arrivals) - opening) / 1000;
      const ideal = RELEASE / RATE;
      const early = arrivals.filter((t) => t < opening).length;
      results.push([`release at an opening: busiest second (${RATE}/s)`, String(busiest), `≤ ${RATE}`, busiest <= RATE && early === 0]);
      results.push([`release: ${RELEASE} messages (ideal ${ideal.toFixed(0)} s)`, `${took.toFixed(1)} s`, "≤ +10 %", took <= ideal * 1.1]);
    }

    // 3. Lateness of releases spread over time: a cap's window ending for each user at its own moment.
    if (PARTS.has("lateness")) {
      await admin("PUT", "/api/admin/policies", { frequencyCaps: [{ name: "1 per 15 s", limit: 1, window: { seconds: CAP_SECONDS } }] });
      const first = await execute("/late-first", LATE_USERS);
      await until(async () => (await count(first, ["Sent"])) === LATE_USERS, 60_000, "first messages");
      const second = await execute("/late", LATE_USERS);
      await until(async () => (await count(second, ["Deferred"])) === LATE_USERS, 60_000, "second messages deferred");
      const due = new Map(
        (
          await db.query<{ id: string; due: number }>(
            "SELECT id, (extract(epoch FROM due_at) * 1000)::float8 AS due FROM deliveries WHERE workspace_id = $1 AND broadcast_id = $2",
            [workspaceId, second],
          )
        ).rows.map((r) => [r.id, r.due]),
      );
      await until(async () => hooks.at("/late").size >= LATE_USERS, 120_000, "second messages released");
      const lateness = [...hooks.at("/late")].map(([id, t]) => (t - due.get(id)!) / 1000);
      const p99 = quantile(lateness, 0.99);
      results.push(["release lateness after notBefore, p99 (s)", p99.toFixed(2), "≤ 5", p99 <= 5]);
      results.push(["release lateness, median (s)", median(lateness).toFixed(2), "—", true]);
    }

    console.log("\n=== bench:policies ===");
    for (const r of results) line(...r);
  } finally {
    await db.end();
    await bench.stop();
    await hooks.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
