// Slow providers never cause a second send: a webhook receiver and an SMTP server on 127.0.0.1
// that answer so slowly that a claimed chunk outlasts the delivery lease (3 s here). The senders
// renew their claims while the provider works, so every member gets exactly one message — counted
// at the receiver by `webhook-id` and `Message-ID` — and a broadcast never has more senders than
// its slots, however long its chunks take.
import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { segmentWorld } from "../segments/support.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { broadcastEnd, plan } from "./support.ts";

/** Each webhook request is answered after this long. */
const WEBHOOK_DELAY_MS = 2000;
/** Each message's DATA is accepted after this long. */
const SMTP_DELAY_MS = 250;

let t: TestApp;
let receiver: Receiver;
let receiverUrl: string;
/** webhook-id → requests received with it. */
const hooks = new Map<string, number>();
let smtp: SMTPServer;
let smtpPort: number;
/** Message-ID → messages received with it. */
const mails = new Map<string, number>();

beforeAll(async () => {
  receiver = await startReceiver(({ id }, res) => {
    hooks.set(id, (hooks.get(id) ?? 0) + 1);
    setTimeout(() => res.writeHead(200).end(), WEBHOOK_DELAY_MS);
  });
  receiverUrl = receiver.url;
  smtp = new SMTPServer({
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onData(stream, _session, callback) {
      let raw = "";
      stream.on("data", (c: Buffer) => (raw += c.toString("latin1")));
      stream.on("end", () => {
        const id = /^message-id:\s*(\S+)/im.exec(raw)?.[1] ?? "(none)";
        mails.set(id, (mails.get(id) ?? 0) + 1);
        setTimeout(callback, SMTP_DELAY_MS);
      });
    },
  });
  await new Promise<void>((r) => smtp.listen(0, "127.0.0.1", () => r()));
  smtpPort = (smtp.server.address() as AddressInfo).port;
  // A send lane wider than a broadcast's 4 slots: only the slot locks keep its senders at 4.
  t = await createTestApp({ outboundAllowedHosts: ["127.0.0.1"], deliveryLeaseSeconds: 3, sendConcurrency: 16 });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
  await new Promise<void>((r) => smtp?.close(() => r()));
});

async function members(n: number) {
  const w = await segmentWorld(t);
  const now = Date.now();
  for (let i = 0; i < n; i += 500) {
    await w.send(
      Array.from({ length: Math.min(500, n - i) }, (_, j) => ({
        type: "identify",
        userId: `u-${i + j}`,
        traits: { plan: "pro", email: `u-${i + j}@example.test` },
        timestamp: new Date(now - 1000).toISOString(),
      })),
    );
  }
  return w;
}

describe("slow providers", () => {
  it("a webhook endpoint answering in 2 s: each member once, and never more than the broadcast's 4 senders", {
    timeout: 120_000,
  }, async () => {
    const w = await members(500);
    const res = await w.admin("POST", "/api/admin/broadcasts/execute", {
      broadcastName: "slow-webhook",
      segmentDefinition: plan("pro"),
      messageTemplateDefinition: { type: "Webhook", url: `${receiverUrl}/hook`, method: "POST", body: '{"user":"{{ user.id }}"}' },
    });
    // Chunks in flight: each claim (and each renewal of it) stamps its rows with one instant.
    let maxChunks = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const { rows } = await t.ctx.db.pool.query<{ n: number }>(
          "SELECT count(DISTINCT due_at)::int AS n FROM deliveries WHERE workspace_id = $1 AND broadcast_id = $2 AND status = 'Sending'",
          [w.ws.id, res.broadcastId],
        );
        maxChunks = Math.max(maxChunks, rows[0]!.n);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const b = await broadcastEnd(w, res.broadcastId, 90_000);
    sampling = false;
    await sampler;
    expect(b.counts).toEqual({ audience: 500, sent: 500, failed: 0, skipped: 0, pending: 0, deferred: 0 });
    expect(maxChunks, "chunks in flight at once (one per sender)").toBeGreaterThan(1);
    expect(maxChunks, "chunks in flight at once (one per sender)").toBeLessThanOrEqual(4);
    expect(hooks.size).toBe(500);
    expect(
      [...hooks.values()].filter((n) => n > 1),
      "webhook-ids received more than once",
    ).toEqual([]);
  });

  it("an SMTP server taking 250 ms a message: each member one email, one Message-ID each", { timeout: 120_000 }, async () => {
    const w = await members(150);
    await w.admin("PUT", "/api/admin/providers", { channel: "Email", type: "Smtp", config: { host: "127.0.0.1", port: smtpPort } });
    const res = await w.admin("POST", "/api/admin/broadcasts/execute", {
      broadcastName: "slow-smtp",
      segmentDefinition: plan("pro"),
      messageTemplateDefinition: { type: "Email", from: "news@example.test", subject: "Hi {{ user.id }}", body: "<p>Hello</p>" },
    });
    const b = await broadcastEnd(w, res.broadcastId, 90_000);
    expect(b.counts).toEqual({ audience: 150, sent: 150, failed: 0, skipped: 0, pending: 0, deferred: 0 });
    expect(mails.size).toBe(150);
    expect(
      [...mails.values()].filter((n) => n > 1),
      "Message-IDs received more than once",
    ).toEqual([]);
  });
});
