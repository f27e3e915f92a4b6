// pnpm bench:broadcast — a 100 000-member broadcast to a local webhook receiver, measured on one
// embedded (durable) PostgreSQL with the server as its own process (node dist/main.js, role all):
//  1. messages/s: members reached / seconds from the first request to the last (target ≥ 5 000);
//  2. that rate divided by a bare undici loop posting the same Standard Webhooks-signed requests
//     (same body size, same headers, 32 in flight, keep-alive) to the same receiver (target ≥ 0.5);
//  3. the time from the execute's 202 to the first request at the receiver (target ≤ 1 s);
//  4. the same members (BENCH_SLOW_MEMBERS, default all) to an endpoint that answers each request
//     after 1 s: messages/s at the default worker concurrency, and repeated webhook-ids (must be 0:
//     a slow provider never makes a claim look abandoned).
// The receiver runs in this process and only counts (and checks webhook-ids are unique). The
// members are written straight into `profiles` (set-based SQL) so the measure is the broadcast,
// not ingestion. Receiver, server and PostgreSQL share the machine's cores.
import { spawn } from "node:child_process";
import { createHmac, randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { Agent, request } from "undici";
import { freePort, startEmbeddedPostgres } from "../src/db/embedded.ts";
import { migrate } from "../src/db/migrate.ts";
import { waitForLine } from "./support.ts";

const here = path.dirname(fileURLToPath(import.meta.url));
const MEMBERS = Number(process.env.BENCH_MEMBERS ?? 100_000);
const SLOW_MEMBERS = Number(process.env.BENCH_SLOW_MEMBERS ?? MEMBERS);
/** How long the slow endpoint (`/slow`) takes to answer. */
const SLOW_MS = 1000;
const SECRET = "bench-signing-secret-0123456789abcdef";
const ROOT = "bench-root-key-0123456789abcdef";

/** The receiver: counts requests per phase, remembers ids, answers 200 at once (after SLOW_MS on /slow). */
function startReceiver() {
  const state = { count: 0, first: 0, last: 0, ids: new Set<string>(), duplicates: 0 };
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const id = String(req.headers["webhook-id"]);
      if (state.ids.has(id)) state.duplicates++;
      else state.ids.add(id);
      const now = performance.now();
      if (state.count === 0) state.first = now;
      state.count++;
      state.last = now;
      if (req.url?.startsWith("/slow")) setTimeout(() => res.writeHead(200).end(), SLOW_MS);
      else res.writeHead(200).end();
    });
  });
  return {
    state,
    reset() {
      Object.assign(state, { count: 0, first: 0, last: 0, duplicates: 0 });
      state.ids.clear();
    },
    listen: () =>
      new Promise<string>((r) => server.listen(0, "127.0.0.1", () => r(`http://127.0.0.1:${(server.address() as AddressInfo).port}`))),
    close: () => new Promise((r) => server.close(r)),
  };
}

/** The baseline: the same signed requests from a plain undici loop, 32 in flight. */
async function bareLoop(url: string, n: number): Promise<number> {
  const agent = new Agent({ connections: 64, pipelining: 1 });
  const key = Buffer.from(SECRET);
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    for (let i = next++; i < n; i = next++) {
      const id = randomUUID();
      const body = `{"user":"member-${i}","plan":"pro"}`;
      const ts = Math.floor(Date.now() / 1000);
      const signature = createHmac("sha256", key).update(`${id}.${ts}.${body}`).digest("base64");
      const res = await request(`${url}/hook`, {
        method: "POST",
        dispatcher: agent,
        headers: {
          "content-type": "application/json",
          "webhook-id": id,
          "webhook-timestamp": String(ts),
          "webhook-signature": `v1,${signature}`,
          "user-agent": "bench",
        },
        body,
      });
      await res.body.dump();
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
  const rate = n / ((performance.now() - started) / 1000);
  await agent.close();
  return rate;
}

async function main() {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "tidings-bench-bcast-"));
  const db = await startEmbeddedPostgres({ dataDir });
  const url = db.urlFor("postgres");
  await migrate(url);
  const receiver = startReceiver();
  const receiverUrl = await receiver.listen();
  const port = await freePort();
  // BENCH_NODE_ARGS: extra options for the server's node (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof").
  const nodeArgs = process.env.BENCH_NODE_ARGS?.split(" ").filter(Boolean) ?? [];
  const server = spawn(process.execPath, [...nodeArgs, path.join(here, "..", "dist", "main.js")], {
    env: {
      ...process.env,
      DATABASE_URL: url,
      PORT: String(port),
      LOG_LEVEL: "warn",
      TIDINGS_DATA_DIR: dataDir,
      TIDINGS_ROOT_KEY: ROOT,
      TIDINGS_SECRET_KEY: "bench-secret-key-0123456789abcdef0123456789",
      TIDINGS_WEBHOOK_ALLOWED_HOSTS: "127.0.0.1",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const base = `http://127.0.0.1:${port}`;
  try {
    const [, workspaceId, adminKey] = await waitForLine(
      server,
      /Created workspace "default" \(([0-9a-f-]{36})\)[\s\S]*?admin API key:\s+(\S+)[\s\S]*?listening on /,
    );
    const admin = async (method: string, p: string, body?: unknown) => {
      const res = await fetch(base + p, {
        method,
        headers: { authorization: `Bearer ${adminKey}`, ...(body ? { "content-type": "application/json" } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await res.text();
      if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${text}`);
      return text ? JSON.parse(text) : null;
    };

    const client = new pg.Client({ connectionString: url });
    await client.connect();
    let t = performance.now();
    await client.query(
      `INSERT INTO profiles (workspace_id, profile_id, traits)
       SELECT $1, 'member-' || i, jsonb_build_object('plan', 'pro', 'email', 'member-' || i || '@example.test', 'n', i)
       FROM generate_series(0, $2 - 1) i`,
      [workspaceId, MEMBERS],
    );
    await client.query("ANALYZE profiles");
    console.log(`members loaded: ${MEMBERS} in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    await admin("PUT", "/api/admin/providers", { channel: "Webhook", type: "Webhook", config: { signingSecret: SECRET } });

    // Warm-up: a small broadcast (JIT, connections), then the measured one.
    const run = async (name: string, segmentDefinition: unknown, hook = "/hook") => {
      receiver.reset();
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
      for (;;) {
        const b = await admin("GET", `/api/admin/broadcasts/${res.broadcastId}`);
        if (["Completed", "Failed", "Cancelled"].includes(b.status))
          return { b, started, accepted, ...receiver.state, distinct: receiver.state.ids.size };
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const warm = await run("warm-up", {
      entryNode: { type: "Trait", id: "t", path: "email", operator: { type: "Equals", value: "member-1@example.test" } },
      nodes: [],
    });
    console.log(`warm-up: ${warm.b.status}, ${warm.count} message(s)`);
    t = performance.now();
    const r = await run("bench", { entryNode: { type: "Everyone", id: "all" }, nodes: [] });
    const seconds = (r.last - r.first) / 1000;
    const rate = r.count / seconds;
    const firstMs = r.first - r.accepted;
    console.log(
      `broadcast: ${r.b.status} counts ${JSON.stringify(r.b.counts)}; ${r.count} requests (${r.distinct} distinct webhook-ids, ${r.duplicates} repeats) in ${seconds.toFixed(2)} s`,
    );

    receiver.reset();
    const bare = await bareLoop(receiverUrl, MEMBERS);

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

    const ratio = rate / bare;
    const line = (name: string, value: string, target: string, ok: boolean) =>
      console.log(`${name.padEnd(44)} ${value.padStart(12)}   target ${target.padEnd(10)} ${ok ? "PASS" : "FAIL"}`);
    console.log("\n=== bench:broadcast ===");
    line(`messages/s (${MEMBERS} members, webhook)`, rate.toFixed(0), "≥ 5000", rate >= 5000);
    line("bare undici loop, signed requests/s", bare.toFixed(0), "—", true);
    line("broadcast / bare loop", ratio.toFixed(2), "≥ 0.5", ratio >= 0.5);
    line("execute 202 → first delivery (ms)", firstMs.toFixed(0), "≤ 1000", firstMs <= 1000);
    line("every member exactly once", `${r.distinct}/${MEMBERS}`, "all", r.distinct === MEMBERS && r.b.counts.sent === MEMBERS);
    line(`slow endpoint (${SLOW_MS} ms): messages/s (${slow.count})`, slowRate.toFixed(0), "—", true);
    line("slow endpoint: repeated webhook-ids", String(slow.duplicates), "0", slow.duplicates === 0 && slow.b.counts.sent === slow.count);
  } finally {
    server.kill("SIGTERM");
    await new Promise((r) => server.once("exit", r));
    await receiver.close();
    await db.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
