// A provider whose secrets the server cannot decrypt (saved under another TIDINGS_SECRET_KEY)
// makes its channel's deliveries fail with a reason naming the key, not an error somewhere else;
// a stored config that is no longer valid names the field.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { providerForSending, ProviderUnusableError, upsertProvider } from "../../src/messaging/providers/service.ts";
import { SecretBox } from "../../src/lib/secrets.ts";
import { broadcastEnd, plan } from "../broadcasts/support.ts";
import { identify, segmentWorld, type SegmentWorld } from "../segments/support.ts";
import { createTestApp, type TestApp } from "../support/app.ts";

const OTHER_KEY = "another-secret-key-0123456789abcdef0123456789";
const UNREADABLE = "the Email provider's secrets cannot be decrypted with the current TIDINGS_SECRET_KEY";

let t: TestApp;
let w: SegmentWorld;

beforeAll(async () => {
  t = await createTestApp();
  w = await segmentWorld(t);
  const now = Date.now();
  await w.send([
    identify("amy", { plan: "pro", email: "amy@example.test" }, now - 1000),
    identify("ben", { plan: "pro", email: "ben@example.test" }, now - 1000),
  ]);
  // Saved by a server with another secret key; this one reads it with its own.
  await t.ctx.db.prisma.$transaction((tx) =>
    upsertProvider(tx, new SecretBox(OTHER_KEY), w.ws.id, {
      channel: "Email",
      type: "Smtp",
      config: { host: "127.0.0.1", port: 9, secure: false, username: "mailer", password: "smtp-password-0123456789" },
    }),
  );
});
afterAll(async () => {
  await t?.close();
});

describe("a provider whose secrets cannot be decrypted", () => {
  it("is refused for sending with a typed error naming TIDINGS_SECRET_KEY", async () => {
    const read = providerForSending(t.ctx.db.prisma, new SecretBox(t.ctx.config.secretKey), w.ws.id, "Email");
    await expect(read).rejects.toBeInstanceOf(ProviderUnusableError);
    await expect(read).rejects.toThrow(UNREADABLE);
  });

  it("fails every delivery of a broadcast with that reason", async () => {
    const started = await w.admin("POST", "/api/admin/broadcasts/execute", {
      broadcastName: "unreadable-secrets",
      segmentDefinition: plan("pro"),
      messageTemplateDefinition: { type: "Email", from: "news@acme.test", subject: "News", body: "<p>Hello</p>" },
    });
    const b = await broadcastEnd(w, started.broadcastId);
    expect(b).toMatchObject({ status: "Completed", counts: { audience: 2, sent: 0, failed: 2 } });
    const { items } = await w.admin("GET", `/api/admin/deliveries?broadcastId=${started.broadcastId}`);
    expect(items).toHaveLength(2);
    for (const d of items) {
      expect(d).toMatchObject({ status: "Failed", reason: expect.stringContaining(UNREADABLE) });
      expect(d.reason).toContain("save the provider again");
    }
  });
});

describe("a provider whose stored config is not valid", () => {
  it("is refused for sending with a typed error naming the field", async () => {
    const ws = await t.newWorkspace();
    const box = new SecretBox(t.ctx.config.secretKey);
    const { value: saved } = await t.ctx.db.prisma.$transaction((tx) =>
      upsertProvider(tx, box, ws.id, {
        channel: "Email",
        type: "Smtp",
        config: { host: "127.0.0.1", port: 2525, password: "smtp-password-0123456789" },
      }),
    );
    await t.ctx.db.prisma.channelProvider.update({
      where: { workspaceId_id: { workspaceId: ws.id, id: saved.id } },
      data: { config: { host: "127.0.0.1", port: "not a port" } },
    });
    const read = providerForSending(t.ctx.db.prisma, box, ws.id, "Email");
    await expect(read).rejects.toBeInstanceOf(ProviderUnusableError);
    await expect(read).rejects.toThrow(/^the Email provider's stored Smtp config is invalid: config\.port: /);
  });
});
