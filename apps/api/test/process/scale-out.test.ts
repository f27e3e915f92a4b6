// Scale-out (issue 20, item 2): two `api` and two `worker` processes on one PostgreSQL. Paced
// ingestion through both apis (a quarter of the batches sent to both at once: duplicates by
// messageId), a paced broadcast to every user and a journey (segment entry → delay → webhook)
// that users enter as the ingested identifies move them into its segment, all at once. Every
// event is stored once, every user messaged exactly once per source, and the segment follows an
// identify (the identify's commit → the commit of the membership change row) within 1 s at p95.
import path from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { type EmbeddedDatabase, startEmbeddedPostgres } from "../../src/db/embedded.ts";
import { expectEachOnce, startTally, type Tally } from "../support/receiver.ts";
import {
  callApi,
  countStored,
  errorsIn,
  cleanUp,
  sleep,
  tempDir,
  listAll,
  putWebhookJourney,
  type ServerProcess,
  startServer,
  stopServer,
  waitUntil,
} from "./server-process.ts";

/** Users: all of them the broadcast's audience; the first FLIPS turn "pro" during the run and enter the journey. */
const USERS = 600;
const FLIPS = 300;
/** Ingestion: LOOPS clients (half per api), each a batch of BATCH_EVENTS every PERIOD_MS: 250 events/s. */
const LOOPS = 4;
const PERIOD_MS = 160;
const BATCH_EVENTS = 10;
const TICKS = FLIPS / LOOPS;
/** Every DUPLICATE_EVERY-th batch of a client goes to both apis at once. */
const DUPLICATE_EVERY = 4;
/** The broadcast sends at this rate: its 600 messages span the ingestion (about 12 s). */
const BROADCAST_RATE = 50;
const FRESHNESS_P95_MS = 1_000;
const ROOT_KEY = "root-key-for-scale-out-0123456789abcdef";
// Commit timestamps date each membership change as its readers see it; the rest is for speed.
const PG_FLAGS = [
  ["track_commit_timestamp", "on"],
  ["fsync", "off"],
  ["synchronous_commit", "off"],
  ["full_page_writes", "off"],
  ["max_connections", "200"],
].flatMap(([k, v]) => ["-c", `${k}=${v}`]);

let database: EmbeddedDatabase | null = null;
let receiver: Tally | null = null;

afterAll(() =>
  cleanUp(
    () => receiver?.close(),
    () => database?.stop(),
  ),
);
const quantile = (q: number) => (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.ceil(xs.length * q) - 1]!;
const p50 = quantile(0.5);
const p95 = quantile(0.95);

/** Posts a batch as a client would: again after a 503 (every other answer but 204 is recorded as wrong). */
async function postBatch(server: ServerProcess, writeKey: string, batch: unknown[], wrong: string[]) {
  for (let attempt = 0; attempt < 50; attempt++) {
    const res = await fetch(`${server.url}/v1/batch`, {
      method: "POST",
      headers: { authorization: `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}`, "content-type": "application/json" },
      body: JSON.stringify({ batch }),
    });
    const text = await res.text();
    if (res.status === 204) return true;
    if (res.status !== 503) {
      wrong.push(`${res.status} ${text}`);
      return false;
    }
    await sleep(100);
  }
  wrong.push("503 fifty times");
  return false;
}

/** The deliveries a worker process recorded as sent (its /metrics). */
async function sentBy(worker: ServerProcess) {
  const text = await (await fetch(`${worker.url}/metrics`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith("tidings_deliveries_total{") && l.includes('status="Sent"'))
    .reduce((n, l) => n + Number(l.split(" ").pop()), 0);
}

describe("scale-out: two api and two worker processes on one PostgreSQL", () => {
  it("ingestion through both apis with duplicates, a broadcast and a journey at once: every event stored once, every user messaged once per source, segment freshness p95 ≤ 1 s", {
    timeout: 180_000,
  }, async () => {
    const began = Date.now();
    const dir = await tempDir("scale-out");
    database = await startEmbeddedPostgres({ dataDir: dir, postgresFlags: PG_FLAGS });
    const databaseUrl = database.urlFor("postgres");
    receiver = await startTally();
    const env = {
      DATABASE_URL: databaseUrl,
      TIDINGS_ROOT_KEY: ROOT_KEY,
      TIDINGS_SECRET_KEY: "secret-key-for-scale-out-0123456789abcdef",
      TIDINGS_WEBHOOK_ALLOWED_HOSTS: "127.0.0.1",
    };
    const serverDir = path.join(dir, "server");
    // All four at once on a fresh database, as a deployment of replicas starts: they migrate it together.
    const [apis, workers] = await Promise.all([
      Promise.all([0, 1].map(() => startServer(serverDir, { ...env, TIDINGS_ROLE: "api" }))),
      Promise.all([0, 1].map(() => startServer(serverDir, { ...env, TIDINGS_ROLE: "worker" }))),
    ]);
    const started = Date.now();

    const ws = await callApi(apis[0]!, ROOT_KEY, "POST", "/api/admin/workspaces", { name: "scale-out" });
    const admin = (method: string, p: string, body?: unknown) => callApi(apis[1]!, ws.adminApiKey, method, p, body);
    const users = Array.from({ length: USERS }, (_, i) => `user-${i}`);
    const flipped = users.slice(0, FLIPS);
    // Moved to "pro" before the measured run, through each api: every process has run its whole path once.
    const warm = users.slice(FLIPS, FLIPS + 4);
    const entrants = [...flipped, ...warm];
    const wrong: string[] = [];
    expect(
      await postBatch(
        apis[0]!,
        ws.writeKey,
        users.map((userId) => ({ type: "identify", userId, messageId: `signup-${userId}`, traits: { plan: "free" } })),
        wrong,
      ),
    ).toBe(true);
    const pro = await admin("PUT", "/api/admin/segments", {
      name: "pro",
      definition: { entryNode: { type: "Trait", id: "p", path: "plan", operator: { type: "Equals", value: "pro" } }, nodes: [] },
    });
    const journey = await putWebhookJourney(admin, {
      name: "welcome-pro",
      segmentId: pro.id,
      url: `${receiver.url}/journey`,
      delaySeconds: 1,
    });
    for (const [i, userId] of warm.entries())
      expect(
        await postBatch(
          apis[i % 2]!,
          ws.writeKey,
          [{ type: "identify", userId, messageId: `flip-${userId}`, traits: { plan: "pro" } }],
          wrong,
        ),
      ).toBe(true);
    await waitUntil(() => receiver!.got("/journey").size === warm.length, 30_000, "the warm-up's journey messages");
    const broadcast = await admin("POST", "/api/admin/broadcasts/execute", {
      broadcastName: "everyone",
      segmentDefinition: { entryNode: { type: "Trait", id: "p", path: "plan", operator: { type: "Exists" } }, nodes: [] },
      messageTemplateDefinition: { type: "Webhook", url: `${receiver.url}/broadcast`, method: "POST", body: '{"user":"{{ user.id }}"}' },
      rateLimitPerSecond: BROADCAST_RATE,
    });

    // Paced clients: each tick one identify moving a user to "pro" and track events.
    const acked = new Set([...users.map((u) => `signup-${u}`), ...warm.map((u) => `flip-${u}`)]);
    const flipSent = new Map<string, number>();
    let posted = 0;
    const broadcastAtStart = receiver.got("/broadcast").size;
    const start = Date.now() + 50;
    await Promise.all(
      Array.from({ length: LOOPS }, async (_, loop) => {
        const own = flipped.filter((_, i) => i % LOOPS === loop);
        for (let k = 0; k < TICKS; k++) {
          const wait = start + loop * (PERIOD_MS / LOOPS) + k * PERIOD_MS - Date.now();
          if (wait > 0) await sleep(wait);
          const userId = own[k]!;
          const batch = [
            { type: "identify", userId, messageId: `flip-${userId}`, traits: { plan: "pro" } },
            ...Array.from({ length: BATCH_EVENTS - 1 }, (_, i) => ({
              type: "track",
              userId: users[(loop * 7919 + k * 131 + i * 17) % USERS],
              event: "Viewed",
              messageId: `track-${loop}-${k}-${i}`,
              properties: { k, i },
            })),
          ];
          const targets = k % DUPLICATE_EVERY === 0 ? [apis[0]!, apis[1]!] : [apis[(loop + k) % 2]!];
          flipSent.set(userId, Date.now());
          posted += batch.length * targets.length;
          const ok = await Promise.all(targets.map((api) => postBatch(api, ws.writeKey, batch, wrong)));
          if (ok.includes(true)) for (const e of batch) acked.add(e.messageId);
        }
      }),
    );
    const ingestSeconds = (Date.now() - start) / 1000;
    const broadcastAtEnd = receiver.got("/broadcast").size;
    console.log(
      `scale-out: ingestion ran ${ingestSeconds.toFixed(1)} s; broadcast messages received ${broadcastAtStart} at its start, ${broadcastAtEnd} at its end`,
    );
    expect(wrong.slice(0, 5), `${wrong.length} answers other than 204 or 503`).toEqual([]);
    // The broadcast was sending while the ingestion ran.
    expect(broadcastAtStart, "the broadcast overlapped the ingestion").toBeLessThan(USERS / 2);
    expect(broadcastAtEnd).toBeGreaterThan(broadcastAtStart);

    // Every acknowledged event (the sign-ups and the warm-up too) is stored, once.
    const ids = [...acked];
    const { stored, missing } = await countStored(databaseUrl, ws.workspace.id, ids);
    expect(missing.slice(0, 5), `${missing.length} of ${ids.length} acknowledged events lost`).toEqual([]);
    expect(stored).toBe(ids.length);
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    try {
      const { rows } = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM events WHERE workspace_id = $1", [ws.workspace.id]);
      expect(rows[0]!.n, "events beyond those sent").toBe(ids.length);

      // Freshness (PRODUCT §4): from the identify's commit to the commit of its "entered" change;
      // and, reported, from the client's request to that commit.
      await waitUntil(
        async () => (await admin("GET", `/api/admin/segments/${pro.id}`)).memberCount === entrants.length,
        30_000,
        `${entrants.length} members of the segment`,
      );
      const changes = await db.query<{ profile_id: string; entered: boolean; committed: number; caused: number; evaluated: number }>(
        `SELECT c.profile_id, c.entered, (extract(epoch FROM c.at) * 1000)::float8 AS evaluated,
           (extract(epoch FROM pg_xact_commit_timestamp(c.xmin)) * 1000)::float8 AS committed,
           (extract(epoch FROM pg_xact_commit_timestamp(e.xmin)) * 1000)::float8 AS caused
         FROM segment_membership_changes c
         JOIN events e ON e.workspace_id = c.workspace_id AND e.message_id = 'flip-' || c.profile_id
         WHERE c.workspace_id = $1 AND c.segment_id = $2`,
        [ws.workspace.id, pro.id],
      );
      expect(changes.rows.filter((c) => !c.entered)).toEqual([]);
      expect(changes.rows.map((c) => c.profile_id).sort(), "one entry per user moved to pro").toEqual([...entrants].sort());
      const measured = changes.rows.filter((c) => flipSent.has(c.profile_id));
      const lags = measured.map((c) => c.committed - c.caused);
      const fromRequest = measured.map((c) => c.committed - flipSent.get(c.profile_id)!);
      // Where the time goes: waiting for the engine to pick the change up (its evaluation's clock), then evaluating.
      const pickedUp = measured.map((c) => c.evaluated - c.caused);
      const evaluating = measured.map((c) => c.committed - c.evaluated);
      const freshness = p95(lags);

      // The journey: one run per user, completed, one message each.
      await waitUntil(
        async () => {
          const s = await admin("GET", `/api/admin/journeys/${journey.id}/stats`);
          return s.completed === entrants.length && s.active === 0;
        },
        60_000,
        `${entrants.length} completed runs`,
      );
      const runs = await listAll(apis[0]!, ws.adminApiKey, `/api/admin/journeys/${journey.id}/runs`);
      expect(runs.map((r) => r.userId).sort()).toEqual([...entrants].sort());
      const journeyDeliveries = await listAll(apis[0]!, ws.adminApiKey, `/api/admin/deliveries?journeyId=${journey.id}`);
      await waitUntil(() => receiver!.got("/journey").size === entrants.length, 15_000, `${entrants.length} journey messages`);

      // The broadcast: completes, each member reached once.
      await waitUntil(
        async () => (await admin("GET", `/api/admin/broadcasts/${broadcast.broadcastId}`)).status === "Completed",
        60_000,
        "the broadcast completes",
      );
      const counts = (await admin("GET", `/api/admin/broadcasts/${broadcast.broadcastId}`)).counts;
      expect(counts).toEqual({ audience: USERS, sent: USERS, failed: 0, skipped: 0, pending: 0, deferred: 0 });
      const broadcastDeliveries = await listAll(apis[0]!, ws.adminApiKey, `/api/admin/deliveries?broadcastId=${broadcast.broadcastId}`);

      for (const [source, deliveries, audience] of [
        ["journey", journeyDeliveries, entrants],
        ["broadcast", broadcastDeliveries, users],
      ] as const) {
        expect(
          deliveries.filter((d) => d.status !== "Sent"),
          source,
        ).toEqual([]);
        const got = receiver.got(`/${source}`);
        expect(
          expectEachOnce(
            got,
            deliveries.map((d) => d.id),
            [...audience],
          ),
          `${source}: requests repeating a delivery id`,
        ).toBe(0);
        expect(got.size, `${source}: requests under ids of no delivery`).toBe(audience.length);
      }
      const perWorker = await Promise.all(workers.map(sentBy));
      expect(perWorker[0]! + perWorker[1]!).toBe(USERS + entrants.length);
      for (const p of [...apis, ...workers]) expect(errorsIn(p), p.output().slice(-4_000)).toEqual([]);
      await Promise.all([...apis, ...workers].map(stopServer));

      console.log(
        [
          `scale-out: 2 api + 2 worker ready ${((started - began) / 1000).toFixed(1)} s after the test began`,
          `ingestion: ${ids.length - USERS - warm.length} events (${posted - (ids.length - USERS - warm.length)} posted twice) in ${ingestSeconds.toFixed(1)} s = ${Math.round((ids.length - USERS - warm.length) / ingestSeconds)} events/s`,
          `segment freshness, identify committed → change committed: p50 ${Math.round(p50(lags))} ms, p95 ${Math.round(freshness)} ms, max ${Math.round(Math.max(...lags))} ms`,
          `  from the identify's request: p50 ${Math.round(p50(fromRequest))} ms, p95 ${Math.round(p95(fromRequest))} ms, max ${Math.round(Math.max(...fromRequest))} ms`,
          `  of which until the engine took it up: p50 ${Math.round(p50(pickedUp))} ms, p95 ${Math.round(p95(pickedUp))} ms; evaluating and committing: p50 ${Math.round(p50(evaluating))} ms, p95 ${Math.round(p95(evaluating))} ms`,
          `messages sent per worker: ${perWorker.join(" / ")}`,
          `test ${((Date.now() - began) / 1000).toFixed(1)} s`,
        ].join("\n"),
      );
      expect(freshness, `segment freshness p95 (ms) over ${lags.length} identifies`).toBeLessThanOrEqual(FRESHNESS_P95_MS);
    } finally {
      await db.end();
    }
  });
});
