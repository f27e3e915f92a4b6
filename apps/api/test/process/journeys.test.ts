// The journey runtime across real processes: an API process and worker processes on one database,
// a webhook receiver on 127.0.0.1 counting `webhook-id`s (the delivery id). Runs waiting in a
// delay outlive a SIGKILLed worker; a worker SIGKILLed while a message node's deliveries are being
// sent is followed by at most one resend per user, under the same id; two workers running one
// journey message each user once; track events answered 204 start their runs although every
// process is SIGKILLed right after.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../support/app.ts";
import { expectEachOnce, startTally, type Tally } from "../support/receiver.ts";
import {
  callApi,
  errorsIn,
  killServer as kill,
  killStarted,
  listAll,
  putWebhookJourney,
  type ServerProcess,
  startServer,
  stopServer as stop,
  waitUntil,
} from "./server-process.ts";

const USERS = 200;
/** The receiver's answer time on the slow path: a chunk of deliveries takes about a second to send. */
const SLOW_MS = 300;
const ROOT_KEY = "root-key-for-journey-processes-0123456";
let env: NodeJS.ProcessEnv;
let dir: string;
let receiver: Tally;
let api: ServerProcess;

beforeAll(async () => {
  receiver = await startTally((p) => (p === "/slow" ? SLOW_MS : 0));
  dir = await mkdtemp(path.join(os.tmpdir(), "tidings-journeys-"));
  env = {
    DATABASE_URL: await createTestDatabase(),
    TIDINGS_ROOT_KEY: ROOT_KEY,
    TIDINGS_SECRET_KEY: "secret-key-for-journey-processes-0123456789",
    TIDINGS_WEBHOOK_ALLOWED_HOSTS: "127.0.0.1",
    // A delivery claimed by a dead worker is sent again after this.
    TIDINGS_DELIVERY_LEASE_SECONDS: "3",
  };
  api = await startServer(dir, { ...env, TIDINGS_ROLE: "api" });
});
afterAll(async () => {
  await killStarted();
  await receiver?.close();
  await rm(dir, { recursive: true, force: true });
});

const startWorker = () => startServer(dir, { ...env, TIDINGS_ROLE: "worker" });

/**
 * A workspace with a manual segment and a Running journey: entry → (a delay) → a webhook to
 * `/${hook}` naming the user → exit. `before` are members when it starts, `after` join later.
 */
async function journeyOf(name: string, hook: string, delaySeconds: number | null, before: string[], after: string[] = []) {
  const ws = await callApi(api, ROOT_KEY, "POST", "/api/admin/workspaces", { name });
  const admin = (method: string, p: string, body?: unknown) => callApi(api, ws.adminApiKey, method, p, body);
  const segment = await admin("PUT", "/api/admin/segments", { name: "audience" });
  const add = async (users: string[]) => {
    for (let i = 0; i < users.length; i += 1000)
      await admin("PUT", `/api/admin/segments/${segment.id}/members`, { add: users.slice(i, i + 1000) });
  };
  await add(before);
  // Started at once, while the engine may still be applying them: the journey's start enters
  // them either way (its entry job waits for an evaluation under way).
  const journey = await putWebhookJourney(admin, { name, segmentId: segment.id, url: `${receiver.url}/${hook}`, delaySeconds });
  await add(after);
  const stats = () => admin("GET", `/api/admin/journeys/${journey.id}/stats`);
  return {
    id: journey.id as string,
    stats,
    runs: (): Promise<any[]> => listAll(api, ws.adminApiKey, `/api/admin/journeys/${journey.id}/runs`),
    deliveries: (): Promise<any[]> => listAll(api, ws.adminApiKey, `/api/admin/deliveries?journeyId=${journey.id}`),
    /** Waits until `n` runs have completed and none is active. */
    completed: (n: number, ms: number) =>
      waitUntil(
        async () => {
          const s = await stats();
          return s.completed === n && s.active === 0;
        },
        ms,
        `${n} completed runs`,
      ),
    /** Waits until the journey's `n` deliveries are all sent. */
    sent: (n: number, ms: number) =>
      waitUntil(
        async () => {
          const ds = await listAll(api, ws.adminApiKey, `/api/admin/deliveries?journeyId=${journey.id}`);
          return ds.length === n && ds.every((d) => d.status === "Sent");
        },
        ms,
        `${n} sent deliveries`,
      ),
  };
}

type Journey = Awaited<ReturnType<typeof journeyOf>>;

/** One delivery per run at the message node, one run per user; returns the delivery ids. */
async function expectOnePerRun(j: Journey, users: string[]) {
  const runs = await j.runs();
  expect(runs.map((r) => r.userId).sort()).toEqual([...users].sort());
  expect(runs.filter((r) => r.status !== "Completed")).toEqual([]);
  const ds = await j.deliveries();
  expect(ds.map((d) => `${d.runId}/${d.nodeId}`).sort()).toEqual(runs.map((r) => `${r.id}/send`).sort());
  expect(ds.map((d) => d.userId).sort()).toEqual([...users].sort());
  expect(ds.filter((d) => d.status !== "Sent")).toEqual([]);
  return ds.map((d) => d.id as string);
}

/** Every request the receiver got carried the id of one of the deliveries `ids`. */
function expectOnlyDeliveryIds(got: Map<string, string[]>, ids: string[]) {
  const known = new Set(ids);
  expect(
    [...got.keys()].filter((id) => !known.has(id)),
    "requests under ids of no delivery",
  ).toEqual([]);
}

const usersOf = (tag: string, n: number) => Array.from({ length: n }, (_, i) => `${tag}-${i}`);

describe("journeys across processes", () => {
  it("runs waiting in a delay when their worker is SIGKILLed go on in a new worker: each user messaged once", {
    timeout: 60_000,
  }, async () => {
    const users = usersOf("delay", USERS);
    const worker = await startWorker();
    const j = await journeyOf("delay-kill", "delay", 4, users);
    const got = receiver.got("/delay");
    let runs: any[] = [];
    await waitUntil(
      async () => {
        runs = await j.runs();
        return runs.length === USERS && runs.every((r) => r.nodeId === "wait" && r.waitingUntil);
      },
      20_000,
      "every run waiting in the delay",
    );
    // Killed just before the timers fall due, when the worker's advance job is waiting for them.
    const due = Math.min(...runs.map((r) => r.waitingUntil as number));
    await new Promise((r) => setTimeout(r, Math.max(0, due - Date.now() - 400)));
    await kill(worker);
    expect(got.size, "sent before the delay ended").toBe(0);
    expect((await j.stats()).active).toBe(USERS);

    const restarted = await startWorker();
    const ready = Date.now();
    await j.completed(USERS, 15_000);
    await j.sent(USERS, 15_000);
    const late = Date.now() - ready;
    const ids = await expectOnePerRun(j, users);
    expect(expectEachOnce(got, ids, users), "requests repeating a delivery id").toBe(0);
    expectOnlyDeliveryIds(got, ids);
    expect(errorsIn(restarted)).toEqual([]);
    await stop(restarted);
    console.log(`delay kill: completed and sent ${late} ms after the new worker was ready`);
  });

  it("a worker SIGKILLed while a message node's deliveries are sending: after a restart each user has one delivery, resent at most once under its id", {
    timeout: 60_000,
  }, async () => {
    const users = usersOf("slow", USERS);
    const worker = await startWorker();
    const j = await journeyOf("send-kill", "slow", null, users);
    const got = receiver.got("/slow");
    await waitUntil(() => got.size >= 40, 20_000, "the first messages to reach the receiver");
    await kill(worker);
    // A request the dead worker wrote just before dying is still being read: let it land.
    await new Promise((r) => setTimeout(r, 200));
    const atKill = new Set(got.keys());
    const sending = (await j.deliveries()).filter((d) => d.status === "Sending").map((d) => d.id as string);
    // The kill came mid-send: messages were out and not all of them marked.
    expect(atKill.size).toBeLessThan(USERS);
    expect(sending.length).toBeGreaterThan(0);

    const restarted = await startWorker();
    await j.completed(USERS, 15_000);
    await j.sent(USERS, 20_000);
    const ids = await expectOnePerRun(j, users);
    expectEachOnce(got, ids, users);
    expectOnlyDeliveryIds(got, ids);
    const resent = [...got].filter(([, carried]) => carried.length > 1).map(([id]) => id);
    expect(
      resent.filter((id) => got.get(id)!.length > 2),
      "sent more than twice",
    ).toEqual([]);
    // Only a message that had been handed over before the kill, and not yet marked, is sent again.
    const sendingAtKill = new Set(sending);
    expect(
      resent.filter((id) => !atKill.has(id) || !sendingAtKill.has(id)),
      "resent although not in flight at the kill",
    ).toEqual([]);
    expect(errorsIn(restarted)).toEqual([]);
    await stop(restarted);
    console.log(`send kill: ${atKill.size} received and ${sending.length} sending at the kill, ${resent.length} resent`);
  });

  it("two workers on one database run a journey with a delay: every run completes, each user messaged once", {
    timeout: 60_000,
  }, async () => {
    const users = usersOf("pair", 2 * USERS);
    const workers = await Promise.all([startWorker(), startWorker()]);
    // Half are members when the journey starts, half join afterwards (entries from the segment engine).
    const j = await journeyOf("two-workers", "pair", 2, users.slice(0, USERS), users.slice(USERS));
    const got = receiver.got("/pair");
    await j.completed(2 * USERS, 30_000);
    await j.sent(2 * USERS, 15_000);
    const ids = await expectOnePerRun(j, users);
    expect(expectEachOnce(got, ids, users), "requests repeating a delivery id").toBe(0);
    expectOnlyDeliveryIds(got, ids);
    for (const w of workers) expect(errorsIn(w)).toEqual([]);
    await Promise.all(workers.map(stop));
  });

  // Last: it kills the shared api process and starts another.
  it("track events answered 204 start their runs although every process is SIGKILLed right after", { timeout: 60_000 }, async () => {
    const ws = await callApi(api, ROOT_KEY, "POST", "/api/admin/workspaces", { name: "event-entry-kill" });
    const admin = (method: string, p: string, body?: unknown) => callApi(api, ws.adminApiKey, method, p, body);
    const template = await admin("PUT", "/api/admin/content/templates", {
      name: "thanks",
      definition: { type: "Webhook", url: `${receiver.url}/event`, method: "POST", body: '{"user":"{{ user.id }}"}' },
    });
    const journey = await admin("PUT", "/api/admin/journeys", {
      name: "on-checkout",
      status: "Running",
      definition: {
        entryNode: { type: "EventEntryNode", event: "Checked Out", child: "send" },
        nodes: [{ id: "send", type: "MessageNode", channel: "Webhook", templateId: template.id, child: "ExitNode" }],
        exitNode: { type: "ExitNode", id: "ExitNode" },
      },
    });
    // No worker runs: nothing but the commits can carry the entries over the kill.
    const users = usersOf("event", USERS);
    const res = await fetch(`${api.url}/api/public/apps/batch`, {
      method: "POST",
      headers: { authorization: `Basic ${Buffer.from(`${ws.writeKey}:`).toString("base64")}`, "content-type": "application/json" },
      body: JSON.stringify({ batch: users.map((userId) => ({ type: "track", userId, event: "Checked Out", properties: {} })) }),
    });
    expect(res.status).toBe(204);
    await kill(api);
    api = await startServer(dir, { ...env, TIDINGS_ROLE: "api" });
    const worker = await startWorker();
    const stats = () => callApi(api, ws.adminApiKey, "GET", `/api/admin/journeys/${journey.id}/stats`);
    await waitUntil(async () => (await stats()).completed === USERS, 20_000, `${USERS} completed runs`);
    const got = receiver.got("/event");
    await waitUntil(() => got.size === USERS, 15_000, `${USERS} messages`);
    expect([...got.values()].flat().sort()).toEqual([...users].sort());
    await stop(worker);
  });
});
