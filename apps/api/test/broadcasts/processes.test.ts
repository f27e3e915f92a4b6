// Exactly once across real processes: an API process and worker processes on one database, a
// webhook receiver on 127.0.0.1 counting `webhook-id`s. A worker SIGKILLed mid-broadcast and
// started again still reaches each member exactly once (a message handed to the receiver just
// before the kill may arrive once more with the same webhook-id: the receiver's idempotency key);
// two workers sending one broadcast never send a member twice.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callApi, killStarted, listAll, startServer, waitGone, waitUntil } from "../process/server-process.ts";
import { createTestDatabase } from "../support/app.ts";
import { expectEachOnce, startTally, type Tally } from "../support/receiver.ts";

const USERS = 1500;
let receiver: Tally;
/** webhook-id → user ids it carried (one entry per request received). */
let got: Map<string, string[]>;
let dir: string;

beforeAll(async () => {
  // A little latency, so a broadcast lasts long enough to be interrupted.
  receiver = await startTally(() => 2);
  got = receiver.got("/hook");
  dir = await mkdtemp(path.join(os.tmpdir(), "tidings-bcast-"));
});
afterAll(async () => {
  await killStarted();
  await receiver.close();
  await rm(dir, { recursive: true, force: true });
});

const call = callApi;

async function withDb<T>(url: string, fn: (db: pg.Client) => Promise<T>): Promise<T> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    return await fn(db);
  } finally {
    await db.end();
  }
}

describe("broadcasts across processes", () => {
  it("a worker SIGKILLed mid-broadcast and restarted reaches each member exactly once; two workers never double-send", {
    timeout: 180_000,
  }, async () => {
    const databaseUrl = await createTestDatabase();
    const env = {
      DATABASE_URL: databaseUrl,
      TIDINGS_ROOT_KEY: "root-key-for-broadcast-processes-0123",
      TIDINGS_SECRET_KEY: "secret-key-for-broadcast-processes-0123456",
      TIDINGS_WEBHOOK_ALLOWED_HOSTS: "127.0.0.1",
      TIDINGS_DELIVERY_LEASE_SECONDS: "3",
    };
    const api = await startServer(dir, { ...env, TIDINGS_ROLE: "api" });
    const ws = await call(api, env.TIDINGS_ROOT_KEY, "POST", "/api/admin/workspaces", { name: "broadcast-processes" });
    const users = Array.from({ length: USERS }, (_, i) => `member-${i}`);
    for (let i = 0; i < USERS; i += 500) {
      const res = await fetch(`${api.url}/v1/batch`, {
        method: "POST",
        headers: { authorization: `Basic ${Buffer.from(`${ws.writeKey}:`).toString("base64")}`, "content-type": "application/json" },
        body: JSON.stringify({ batch: users.slice(i, i + 500).map((userId) => ({ type: "identify", userId, traits: { plan: "pro" } })) }),
      });
      expect(res.status).toBe(204);
    }
    const execute = (name: string) =>
      call(api, ws.adminApiKey, "POST", "/api/admin/broadcasts/execute", {
        broadcastName: name,
        segmentDefinition: { entryNode: { type: "Everyone", id: "all" }, nodes: [] },
        messageTemplateDefinition: { type: "Webhook", url: `${receiver.url}/hook`, method: "POST", body: '{"user":"{{ user.id }}"}' },
      });
    const idsOf = async (broadcastId: string) =>
      (await listAll(api, ws.adminApiKey, `/api/admin/deliveries?broadcastId=${broadcastId}`)).map((d: { id: string }) => d.id);
    const completed = (id: string) => async () =>
      (await call(api, ws.adminApiKey, "GET", `/api/admin/broadcasts/${id}`)).status === "Completed";

    // One worker, killed mid-send, then started again.
    let worker = await startServer(dir, { ...env, TIDINGS_ROLE: "worker" });
    const first = await execute("crash");
    await waitUntil(() => got.size >= 200, 30_000, "the first deliveries");
    expect(got.size).toBeLessThan(USERS);
    process.kill(-worker.child.pid!, "SIGKILL");
    await waitGone(worker.child.pid!, true);
    const atKill = got.size;
    // What was in flight when the worker died: claimed (Sending) and not marked.
    const inFlight = new Set(
      await withDb(databaseUrl, async (db) =>
        (
          await db.query<{ id: string }>("SELECT id FROM deliveries WHERE broadcast_id = $1 AND status = 'Sending'", [first.broadcastId])
        ).rows.map((r) => r.id),
      ),
    );
    worker = await startServer(dir, { ...env, TIDINGS_ROLE: "worker" });
    await waitUntil(completed(first.broadcastId), 60_000, "the broadcast to complete after the restart");
    expect(atKill).toBeLessThan(USERS);
    const crashIds = await idsOf(first.broadcastId);
    expect(crashIds).toHaveLength(USERS);
    expectEachOnce(got, crashIds, users);
    // At most one resend, and only of a message that was in flight when the worker died.
    const resent = crashIds.filter((id) => (got.get(id)?.length ?? 0) > 1);
    expect(
      resent.filter((id) => !inFlight.has(id)),
      "resent although not in flight at the kill",
    ).toEqual([]);
    expect(
      resent.filter((id) => got.get(id)!.length > 2),
      "sent more than twice",
    ).toEqual([]);
    const counts = (await call(api, ws.adminApiKey, "GET", `/api/admin/broadcasts/${first.broadcastId}`)).counts;
    expect(counts).toEqual({ audience: USERS, sent: USERS, failed: 0, skipped: 0, pending: 0, deferred: 0 });

    // Two workers share the next broadcast; nobody gets it twice.
    const second = await startServer(dir, { ...env, TIDINGS_ROLE: "worker" });
    const shared = await execute("shared");
    await waitUntil(completed(shared.broadcastId), 60_000, "the shared broadcast to complete");
    const sharedIds = await idsOf(shared.broadcastId);
    expect(expectEachOnce(got, sharedIds, users)).toBe(0);
    expect(second.output()).not.toMatch(/"level":50|error/i);
  });
});
