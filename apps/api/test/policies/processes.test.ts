// A frequency cap is exact across real processes: two server processes (each with workers) on one
// database, 50 messages for one user at once — 25 broadcasts and 25 journeys entered by one event —
// and a cap of 3 a day: exactly 3 reach the webhook receiver, 47 are Deferred to the next midnight
// in the user's zone, with the rule named; the journeys' stats count them per node.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { DateTime } from "luxon";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callApi, killStarted, listAll, type ServerProcess, startServer, waitUntil } from "../process/server-process.ts";
import { createTestDatabase } from "../support/app.ts";
import { startTally, type Tally } from "../support/receiver.ts";

let receiver: Tally;
let dir: string;

beforeAll(async () => {
  receiver = await startTally(() => 5);
  dir = await mkdtemp(path.join(os.tmpdir(), "tidings-policies-"));
});
afterAll(async () => {
  await killStarted();
  await receiver.close();
  await rm(dir, { recursive: true, force: true });
});

const ZONE = "America/New_York";

describe("a frequency cap across processes", () => {
  it("lets exactly 3 of 50 concurrent messages for one user go, and defers 47 to the next local midnight", {
    timeout: 180_000,
  }, async () => {
    const env = {
      DATABASE_URL: await createTestDatabase(),
      TIDINGS_ROOT_KEY: "root-key-for-policy-processes-0123456",
      TIDINGS_SECRET_KEY: "secret-key-for-policy-processes-0123456789",
      TIDINGS_WEBHOOK_ALLOWED_HOSTS: "127.0.0.1",
    };
    const servers: ServerProcess[] = await Promise.all([startServer(dir, env), startServer(dir, { ...env, TIDINGS_ROLE: "worker" })]);
    const api = servers[0]!;
    const ws = await callApi(api, env.TIDINGS_ROOT_KEY, "POST", "/api/admin/workspaces", { name: "policy-processes" });
    const admin = (method: string, p: string, body?: unknown) => callApi(api, ws.adminApiKey, method, p, body);
    const ingest = async (body: unknown) => {
      const res = await fetch(`${api.url}/v1/batch`, {
        method: "POST",
        headers: { authorization: `Basic ${Buffer.from(`${ws.writeKey}:`).toString("base64")}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(204);
    };
    await ingest({ batch: [{ type: "identify", userId: "ann", traits: { plan: "pro", timezone: ZONE } }] });
    await admin("PUT", "/api/admin/policies", { frequencyCaps: [{ name: "three a day", limit: 3, window: { days: 1 } }] });
    const template = await admin("PUT", "/api/admin/content/templates", {
      name: "hook",
      definition: { type: "Webhook", url: `${receiver.url}/capped`, method: "POST", body: '{"user":"{{ user.id }}"}' },
    });
    const journeys = [];
    for (let i = 0; i < 25; i++) {
      journeys.push(
        await admin("PUT", "/api/admin/journeys", {
          name: `ping-${i}`,
          status: "Running",
          definition: {
            entryNode: { type: "EventEntryNode", event: "Ping", child: "send" },
            nodes: [{ id: "send", type: "MessageNode", channel: "Webhook", templateId: template.id, child: "ExitNode" }],
          },
        }),
      );
    }

    // At once: one event enters the 25 journeys, and 25 broadcasts start.
    const started = Date.now();
    await Promise.all([
      ingest({ batch: [{ type: "track", userId: "ann", event: "Ping" }] }),
      ...Array.from({ length: 25 }, (_, i) =>
        admin("POST", "/api/admin/broadcasts/execute", {
          broadcastName: `b-${i}`,
          segmentDefinition: { entryNode: { type: "Trait", id: "p", path: "plan", operator: { type: "Equals", value: "pro" } }, nodes: [] },
          templateId: template.id,
        }),
      ),
    ]);
    let deliveries: any[] = [];
    await waitUntil(
      async () => {
        deliveries = await listAll(api, ws.adminApiKey, "/api/admin/deliveries?userId=ann");
        return deliveries.length === 50 && deliveries.every((d) => d.status === "Sent" || d.status === "Deferred");
      },
      90_000,
      "50 deliveries decided",
    );
    const sent = deliveries.filter((d) => d.status === "Sent");
    const deferred = deliveries.filter((d) => d.status === "Deferred");
    expect(sent).toHaveLength(3);
    expect(deferred).toHaveLength(47);
    expect(receiver.got("/capped").size).toBe(3);
    const midnight = DateTime.fromMillis(started, { zone: ZONE }).startOf("day").plus({ days: 1 }).toMillis();
    for (const d of deferred) {
      expect(d).toMatchObject({ notBefore: midnight, timezone: ZONE, timezoneSource: "trait" });
      expect(d.reason).toMatch(/^held: frequency cap "three a day" \(3 per 1 day\) reached; room at /);
    }
    const stats = await Promise.all(journeys.map((j) => admin("GET", `/api/admin/journeys/${j.id}/stats`)));
    const send = stats.map((s) => s.nodes.find((n: { id: string }) => n.id === "send"));
    expect(send.reduce((a, n) => a + n.deferred, 0) + send.reduce((a, n) => a + n.sent, 0)).toBe(25);
  });
});
