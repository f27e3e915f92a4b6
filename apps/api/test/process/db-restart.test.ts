// The database may go away: a server process runs against a PostgreSQL of the test's own, which is
// stopped for 10 s and started again on the same data directory and port, three times, while 8
// clients post ingestion batches. The server must stay up, answer only 204 or 503 + Retry-After
// (the error envelope) meanwhile, keep every acknowledged event, say it is not ready while the
// database is away, and have its segment engine follow a new event within 2 s of each return; a
// paced broadcast sending all along completes with each member reached once.
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type EmbeddedDatabase, freePort, startEmbeddedPostgres } from "../../src/db/embedded.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { callApi, cleanUp, countStored, type ServerProcess, sleep, startLoad, startServer, tempDir } from "./server-process.ts";

const OUTAGES = 3;
const DOWN_MS = 10_000;
/** Ingestion running before each stop. */
const LOAD_MS = 2_000;
/** From the database's return to the segment following a new event. */
const SEGMENT_LAG_MS = 2_000;
const ROOT_KEY = "root-key-for-db-restart-0123456789abcdef";
const SECRET_KEY = "secret-key-for-db-restart-0123456789abcdef";
// A clean stop checkpoints; nothing here needs durability across a power loss.
const PG_FLAGS = ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"];

/** Members of the broadcast, sent at 10 a second: it spans the three outages. */
const MEMBERS = 400;

let database: EmbeddedDatabase | null = null;
let receiver: Receiver | null = null;

afterAll(() =>
  cleanUp(
    () => receiver?.close(),
    () => database?.stop(),
  ),
);

const call = callApi;

/** Sends one `Marker` event for `userId`, as a client would: again after each 503. */
async function sendMarker(server: ServerProcess, writeKey: string, userId: string) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const res = await fetch(`${server.url}/v1/track`, {
      method: "POST",
      headers: { authorization: `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}`, "content-type": "application/json" },
      body: JSON.stringify({ userId, event: "Marker", messageId: `marker-${userId}` }),
    });
    const text = await res.text();
    if (res.status === 204) return;
    if (res.status !== 503 || Date.now() > deadline) throw new Error(`marker for ${userId}: ${res.status} ${text}`);
    await sleep(20);
  }
}

/** Waits (at most 15 s, to report how late it is) until `userId` is a member; returns when it was seen. */
async function memberSince(server: ServerProcess, adminKey: string, segmentId: string, userId: string): Promise<number> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const res = await fetch(`${server.url}/api/admin/segments/${segmentId}/users?limit=500`, {
      headers: { authorization: `Bearer ${adminKey}` },
    });
    if (res.status === 200) {
      const body = (await res.json()) as { items: { userId: string }[] };
      if (body.items.some((u) => u.userId === userId)) return Date.now();
    } else await res.text();
    if (Date.now() > deadline) throw new Error(`${userId} never entered the segment`);
    await sleep(50);
  }
}

describe("the database goes away and comes back", () => {
  it("three 10 s stops of PostgreSQL under ingestion: the server stays up, answers 204 or 503 + Retry-After, loses nothing acknowledged, and its segments follow events again", {
    timeout: 240_000,
  }, async () => {
    const dir = await tempDir("db-restart");
    const port = await freePort();
    // The temporary directory itself is the data directory (as root, it is opened to `postgres`).
    const startDatabase = () => startEmbeddedPostgres({ dataDir: dir, port, postgresFlags: PG_FLAGS });
    database = await startDatabase();
    const databaseUrl = database.urlFor("postgres");
    /** webhook-id → the users it carried (one per request). */
    const hooks = new Map<string, string[]>();
    receiver = await startReceiver(({ id, body }, res) => {
      hooks.set(id, [...(hooks.get(id) ?? []), JSON.parse(body).user]);
      res.writeHead(200).end();
    });
    const server = await startServer(path.join(dir, "server"), {
      DATABASE_URL: databaseUrl,
      TIDINGS_ROOT_KEY: ROOT_KEY,
      TIDINGS_SECRET_KEY: SECRET_KEY,
      TIDINGS_WEBHOOK_ALLOWED_HOSTS: "127.0.0.1",
    });
    let exit: string | null = null;
    void server.exited.then(([code, signal]) => {
      exit = `exit code ${code}, signal ${signal}`;
    });
    // The server's output without its one line per request answered 503 during an outage.
    const failure = (what: string) => {
      const lines = server.output().split("\n");
      const kept = lines.filter((l) => !l.includes('"msg":"unavailable"'));
      return `${what}\n--- server output (${lines.length - kept.length} "unavailable" lines left out) ---\n${kept.join("\n").slice(-8_000)}`;
    };

    const ws = await call(server, ROOT_KEY, "POST", "/api/admin/workspaces", { name: "db-restart" });
    const segment = await call(server, ws.adminApiKey, "PUT", "/api/admin/segments", {
      name: "marked",
      definition: { entryNode: { type: "Performed", id: "m", event: "Marker" }, nodes: [] },
    });

    const members = Array.from({ length: MEMBERS }, (_, i) => `member-${i}`);
    const batch = await fetch(`${server.url}/v1/batch`, {
      method: "POST",
      headers: { authorization: `Basic ${Buffer.from(`${ws.writeKey}:`).toString("base64")}`, "content-type": "application/json" },
      body: JSON.stringify({ batch: members.map((userId) => ({ type: "identify", userId, traits: { plan: "broadcast" } })) }),
    });
    expect(batch.status).toBe(204);
    const broadcast = await call(server, ws.adminApiKey, "POST", "/api/admin/broadcasts/execute", {
      broadcastName: "through-outages",
      segmentDefinition: {
        entryNode: { type: "Trait", id: "p", path: "plan", operator: { type: "Equals", value: "broadcast" } },
        nodes: [],
      },
      messageTemplateDefinition: { type: "Webhook", url: `${receiver.url}/hook`, method: "POST", body: '{"user":"{{ user.id }}"}' },
      rateLimitPerSecond: 10,
    });

    // Clients pause 50 ms after a 503: they keep asking all through the outage without spinning.
    const load = startLoad(server, ws.writeKey, "restart", 8, 50);
    const lags: number[] = [];
    for (let round = 1; round <= OUTAGES; round++) {
      await sleep(LOAD_MS);
      const unavailableBefore = load.unavailable;
      await database.stop();
      database = null;
      await sleep(DOWN_MS / 2);
      expect(exit, failure(`the server exited during outage ${round}`)).toBeNull();
      // Readiness and the admin API say so too.
      for (const [p, headers] of [
        ["/health/ready", {}],
        ["/api/admin/segments", { authorization: `Bearer ${ws.adminApiKey}` }],
      ] as const) {
        const res = await fetch(server.url + p, { headers });
        const body = (await res.json()) as { error?: { code?: string } };
        expect(res.status, failure(`${p} while the database is away`)).toBe(503);
        expect(res.headers.get("retry-after"), p).toMatch(/^\d+$/);
        expect(body.error?.code, p).toBe("UNAVAILABLE");
      }
      await sleep(DOWN_MS / 2);
      expect(exit, failure(`the server exited during outage ${round}`)).toBeNull();
      expect(load.wrong.slice(0, 3), failure(`${load.wrong.length} answers other than 204 or 503 + Retry-After`)).toEqual([]);
      expect(load.unavailable, "the clients saw the outage").toBeGreaterThan(unavailableBefore);

      database = await startDatabase();
      const back = Date.now();
      const ackedAtReturn = load.acked.length;
      const userId = `marker-${round}`;
      await sendMarker(server, ws.writeKey, userId);
      const seen = await memberSince(server, ws.adminApiKey, segment.id, userId).catch((err: Error) => {
        throw new Error(failure(`after outage ${round}: ${err.message}`));
      });
      lags.push(seen - back);
      expect(seen - back, failure(`segment lag after each return: ${lags.join(", ")} ms`)).toBeLessThanOrEqual(SEGMENT_LAG_MS);
      await expect
        .poll(() => load.acked.length, { message: "the clients' ingestion resumed", timeout: 5_000 })
        .toBeGreaterThan(ackedAtReturn);
    }
    await sleep(1_000);
    await load.stop();

    expect(exit, failure("the server exited")).toBeNull();
    expect(load.wrong.slice(0, 5), failure(`${load.wrong.length} answers other than 204 or 503 + Retry-After`)).toEqual([]);
    const acked = [...new Set(load.acked)];
    const { stored, missing } = await countStored(databaseUrl, ws.workspace.id, acked);
    expect(missing.slice(0, 5), `${missing.length} of ${acked.length} acknowledged events lost`).toEqual([]);
    expect(stored).toBe(acked.length);

    // The broadcast went on through the outages and reached each member once.
    expect(hooks.size, "the broadcast was still sending after the outages").toBeLessThan(MEMBERS);
    await expect
      .poll(async () => (await call(server, ws.adminApiKey, "GET", `/api/admin/broadcasts/${broadcast.broadcastId}`)).status, {
        message: "the broadcast completes",
        timeout: 60_000,
        interval: 500,
      })
      .toBe("Completed");
    const counts = (await call(server, ws.adminApiKey, "GET", `/api/admin/broadcasts/${broadcast.broadcastId}`)).counts;
    expect(counts).toEqual({ audience: MEMBERS, sent: MEMBERS, failed: 0, skipped: 0, pending: 0, deferred: 0 });
    expect([...hooks.values()].flat().sort()).toEqual([...members].sort());
    expect(
      [...hooks.entries()].filter(([, users]) => users.length > 1),
      failure("webhook-ids received twice"),
    ).toEqual([]);
  });
});
