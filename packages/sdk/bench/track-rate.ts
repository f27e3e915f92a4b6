// The SDK's sustained `track` rate (events/s acknowledged by the server) divided by that of a
// raw HTTP batch loop (undici, keep-alive) against the same server, with the same batch size and
// concurrency and the same event shape (messageId and originalTimestamp included): what the
// client's queueing, batching and bookkeeping cost. Target ≥ 0.8.
//
//   node --import tsx packages/sdk/bench/track-rate.ts <host> <writeKey>
//   node --import tsx packages/sdk/bench/track-rate.ts          (starts a server: node apps/api/dist/main.js)
//
// BENCH_SECONDS (per round, default 5), BENCH_ROUNDS (alternating rounds of each, default 2),
// BENCH_WARMUP_SECONDS (default 2). The server, its database and this process share the
// machine's cores: compare the ratio, not the absolute numbers.
import { randomUUID } from "node:crypto";
import { pathToFileURL } from "node:url";
import { Agent, request } from "undici";
import { INGEST_DEFAULTS, Tidings } from "../src/index.js";

export interface TrackRateResult {
  sdkEventsPerSecond: number;
  rawEventsPerSecond: number;
  ratio: number;
  batchEvents: number;
  concurrency: number;
  secondsPerRound: number;
  rounds: number;
}

const BATCH = INGEST_DEFAULTS.maxBatchEvents;
const CONCURRENCY = INGEST_DEFAULTS.maxInFlight;
let seq = 0;
const run = randomUUID().slice(0, 8);

function event(n: number) {
  return { userId: `user-${n % 5000}`, event: "Item Viewed", properties: { sku: `sku-${n % 977}`, price: n % 100, currency: "EUR" } };
}

/** Raw loop: CONCURRENCY workers, each building a batch body and POSTing it, until the deadline. */
async function rawRound(host: string, writeKey: string, seconds: number): Promise<number> {
  const agent = new Agent({ keepAliveTimeout: 10_000 });
  const headers = { authorization: `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}`, "content-type": "application/json" };
  const url = `${host.replace(/\/+$/, "")}/v1/batch`;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  let acknowledged = 0;
  const worker = async () => {
    while (performance.now() < deadline) {
      const batch = [];
      for (let i = 0; i < BATCH; i++) {
        const n = seq++;
        batch.push({ type: "track", messageId: `${run}-raw-${n}`, originalTimestamp: new Date().toISOString(), ...event(n) });
      }
      const body = JSON.stringify({ batch, sentAt: new Date().toISOString() });
      const res = await request(url, { method: "POST", headers, body, dispatcher: agent });
      await res.body.dump();
      if (res.statusCode >= 200 && res.statusCode < 300) acknowledged += BATCH;
      else throw new Error(`raw loop: HTTP ${res.statusCode}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const rate = acknowledged / ((performance.now() - started) / 1000);
  await agent.close();
  return rate;
}

/** SDK: track() as fast as the queue takes it (kept below maxQueueEvents); counts acknowledged events. */
async function sdkRound(host: string, writeKey: string, seconds: number): Promise<number> {
  const errors: string[] = [];
  const tidings = new Tidings({ writeKey, host, onError: (e) => errors.push(e.message) });
  const highWater = INGEST_DEFAULTS.maxQueueEvents / 2;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  while (performance.now() < deadline) {
    const { queued, inFlight } = tidings.stats;
    if (queued + inFlight < highWater) {
      for (let i = 0; i < BATCH; i++) tidings.track({ ...event(seq), messageId: `${run}-sdk-${seq++}` });
      await new Promise((r) => setImmediate(r));
    } else {
      await new Promise((r) => setTimeout(r, 1));
    }
  }
  const acknowledged = tidings.stats.sent;
  const rate = acknowledged / ((performance.now() - started) / 1000);
  await tidings.close();
  if (errors.length) throw new Error(`sdk: ${errors.length} failures, first: ${errors[0]}`);
  return rate;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

export async function trackRate(
  host: string,
  writeKey: string,
  options: { seconds?: number; rounds?: number; warmupSeconds?: number } = {},
) {
  const seconds = options.seconds ?? 5;
  const rounds = Math.max(1, options.rounds ?? 2);
  const warmup = options.warmupSeconds ?? 2;
  if (warmup > 0) {
    await rawRound(host, writeKey, warmup);
    await sdkRound(host, writeKey, warmup);
  }
  // Alternating rounds, so that a drift in the machine's speed hits both alike.
  const raw: number[] = [];
  const sdk: number[] = [];
  for (let i = 0; i < rounds; i++) {
    raw.push(await rawRound(host, writeKey, seconds));
    sdk.push(await sdkRound(host, writeKey, seconds));
  }
  const result: TrackRateResult = {
    sdkEventsPerSecond: Math.round(median(sdk)),
    rawEventsPerSecond: Math.round(median(raw)),
    ratio: Number((median(sdk) / median(raw)).toFixed(3)),
    batchEvents: BATCH,
    concurrency: CONCURRENCY,
    secondsPerRound: seconds,
    rounds,
  };
  return result;
}

async function main() {
  let [host, writeKey] = process.argv.slice(2);
  let stop: (() => Promise<void>) | undefined;
  if (!host || !writeKey) {
    const { startServer } = await import("../test/support/server.js");
    const server = await startServer();
    ({ url: host, writeKey } = server);
    stop = server.stop;
  }
  try {
    const result = await trackRate(host!, writeKey!, {
      seconds: Number(process.env.BENCH_SECONDS ?? 5),
      rounds: Number(process.env.BENCH_ROUNDS ?? 2),
      warmupSeconds: Number(process.env.BENCH_WARMUP_SECONDS ?? 2),
    });
    console.log(
      `track rate: SDK ${result.sdkEventsPerSecond} events/s, raw undici loop ${result.rawEventsPerSecond} events/s ` +
        `(batches of ${result.batchEvents}, ${result.concurrency} in flight) → ratio ${result.ratio} (target ≥ 0.8)`,
    );
    console.log(JSON.stringify(result));
  } finally {
    await stop?.();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
