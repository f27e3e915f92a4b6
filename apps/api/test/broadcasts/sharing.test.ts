// Sending never takes the worker from the rest of the server: while three broadcasts run — one
// paced at 10 messages/s, one to an endpoint answering in 2 s, one large and fast — a user's
// segment membership follows each of its events within a second.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { identify, segmentWorld } from "../segments/support.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { broadcastEnd, getBroadcast, plan } from "./support.ts";

let t: TestApp;
let receiver: Receiver;
let receiverUrl: string;

beforeAll(async () => {
  receiver = await startReceiver(({ path }, res) => {
    setTimeout(() => res.writeHead(200).end(), path === "/slow" ? 2000 : 0);
  });
  receiverUrl = receiver.url;
  // The default worker concurrency (8: 4 sending, 4 for everything else).
  t = await createTestApp({ outboundAllowedHosts: ["127.0.0.1"] });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

const hook = (path: string) => ({ type: "Webhook", url: `${receiverUrl}${path}`, method: "POST", body: '{"user":"{{ user.id }}"}' });

describe("background work shares the worker", () => {
  it("membership follows each event within 1 s while a paced, a slow and a large broadcast send", { timeout: 120_000 }, async () => {
    const w = await segmentWorld(t);
    const now = Date.now();
    for (let i = 0; i < 3000; i += 1000) {
      await w.send(Array.from({ length: 1000 }, (_, j) => identify(`u-${i + j}`, { plan: i + j < 300 ? "slow" : "pro" }, now - 1000)));
    }
    const probe = await w.segment({
      entryNode: { type: "Trait", id: "v", path: "vip", operator: { type: "Equals", value: true } },
      nodes: [],
    });
    await w.settle();

    const execute = (broadcastName: string, segment: string, template: object, extra: object = {}) =>
      w.admin("POST", "/api/admin/broadcasts/execute", {
        broadcastName,
        segmentDefinition: plan(segment),
        messageTemplateDefinition: template,
        ...extra,
      });
    const paced = await execute("paced", "pro", hook("/paced"), { rateLimitPerSecond: 10 });
    const slow = await execute("slow", "slow", hook("/slow"));
    const large = await execute("large", "pro", hook("/large"));

    const member = async () =>
      (
        await t.ctx.db.pool.query(
          "SELECT 1 FROM segment_memberships WHERE workspace_id = $1 AND segment_id = $2 AND profile_id = 'probe'",
          [w.ws.id, probe],
        )
      ).rowCount === 1;
    const lags: number[] = [];
    for (let i = 0; i < 16; i++) {
      const vip = i % 2 === 0;
      const sent = performance.now();
      await w.send([identify("probe", { vip }, Date.now())]);
      while ((await member()) !== vip && performance.now() - sent < 10_000) await new Promise((r) => setTimeout(r, 10));
      lags.push(performance.now() - sent);
      await new Promise((r) => setTimeout(r, 250));
    }
    lags.sort((a, b) => a - b);
    expect(lags.at(-1), `membership lags (ms): ${lags.map(Math.round).join(", ")}`).toBeLessThan(1000);
    // The paced one (2 700 messages at 10/s) was sending throughout.
    expect((await getBroadcast(w, paced.broadcastId)).status).toBe("Running");

    await w.admin("POST", `/api/admin/broadcasts/${paced.broadcastId}/cancel`);
    for (const b of [slow, large]) expect((await broadcastEnd(w, b.broadcastId, 60_000)).status).toBe("Completed");
  });
});
