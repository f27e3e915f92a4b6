// Secrets survive a key change. The database remembers which TIDINGS_SECRET_KEY sealed its
// secrets: a start with another key stops at boot naming the variable, the old key given as
// TIDINGS_SECRET_KEY_PREVIOUS re-encrypts them, and a secret that still cannot be decrypted is
// shown as unreadable (never a 500) until a PUT replaces it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.ts";
import { createDb } from "../../src/db/client.ts";
import { providerForSending } from "../../src/messaging/providers/service.ts";
import { verifySecretKey } from "../../src/messaging/secret-key.ts";
import { SecretBox } from "../../src/lib/secrets.ts";
import { startTidings, type Tidings } from "../../src/app/server.ts";
import { createTestApp, createTestDatabase, type TestApp } from "../support/app.ts";
import { dbRelay } from "../support/db-relay.ts";
import { bearer, request } from "../support/http.ts";

const KEY_A = "a".repeat(40);
const KEY_B = "b".repeat(40);
const KEY_C = "c".repeat(40);
const PASSWORD = "smtp-password-0123456789-LAST";
const smtp = { host: "smtp.acme.test", port: 587, username: "mailer" };

let databaseUrl: string;
const running: Tidings[] = [];
const start = async (env: Record<string, string>) => {
  const config = loadConfig({
    DATABASE_URL: databaseUrl,
    TIDINGS_ROOT_KEY: "r".repeat(30),
    LOG_LEVEL: "silent",
    TIDINGS_MAX_EVENT_LOOP_DELAY_MS: "0",
    ...env,
  });
  const tidings = await startTidings(config, () => {});
  running.push(tidings);
  return tidings;
};
const stop = async (tidings: Tidings) => {
  await tidings.close();
  running.splice(running.indexOf(tidings), 1);
};

beforeAll(async () => {
  databaseUrl = await createTestDatabase();
});
afterAll(async () => {
  for (const tidings of running) await tidings.close();
});

describe("TIDINGS_SECRET_KEY at boot", () => {
  it("refuses another key, rotates with TIDINGS_SECRET_KEY_PREVIOUS, then refuses the old one", async () => {
    const first = await start({ TIDINGS_SECRET_KEY: KEY_A });
    const ws = first.created!;
    const put = await first.app.inject({
      method: "PUT",
      url: "/api/admin/providers",
      headers: bearer(ws.adminApiKey!),
      payload: { channel: "Email", type: "Smtp", config: { ...smtp, password: PASSWORD } },
    });
    expect(put.statusCode).toBe(200);
    await stop(first);

    await expect(start({ TIDINGS_SECRET_KEY: KEY_B })).rejects.toThrow(/TIDINGS_SECRET_KEY: is not the key .*TIDINGS_SECRET_KEY_PREVIOUS/);
    await expect(start({ TIDINGS_SECRET_KEY: KEY_B, TIDINGS_SECRET_KEY_PREVIOUS: KEY_C })).rejects.toThrow(
      /TIDINGS_SECRET_KEY_PREVIOUS does not match it either/,
    );

    const rotated = await start({ TIDINGS_SECRET_KEY: KEY_B, TIDINGS_SECRET_KEY_PREVIOUS: KEY_A });
    const forSending = await providerForSending(rotated.system.db.prisma, new SecretBox(KEY_B), ws.workspaceId!, "Email");
    expect(forSending?.config).toMatchObject({ password: PASSWORD });
    const got = await rotated.app.inject({ method: "GET", url: "/api/admin/providers", headers: bearer(ws.adminApiKey!) });
    expect(got.statusCode).toBe(200);
    expect(got.json().items[0].config.password).toBe("••••LAST");
    await stop(rotated);

    // Rotated for good: the new key alone starts, the old one no longer does.
    await stop(await start({ TIDINGS_SECRET_KEY: KEY_B }));
    await expect(start({ TIDINGS_SECRET_KEY: KEY_A })).rejects.toThrow(/TIDINGS_SECRET_KEY/);
  });
});

describe("the check on a slow database", () => {
  it("a database taking 3 s to accept a connection (replicas starting at once on a busy server) does not stop the boot", {
    timeout: 30_000,
  }, async () => {
    const slow = await dbRelay(databaseUrl, { connectDelayMs: 3_000 });
    const db = createDb(slow.url);
    try {
      await verifySecretKey(db.prisma, { secretKey: KEY_B, previousSecretKey: undefined }, () => {});
    } finally {
      await db.close();
      await slow.close();
    }
  });
});

describe("a stored secret that cannot be decrypted", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it("reads as unreadable (200, never 500), and a PUT with a new value replaces it", async () => {
    const headers = bearer(t.workspace.adminKey);
    const created = await request(t.url, "PUT", "/api/admin/providers", {
      headers,
      body: { channel: "Email", type: "Smtp", config: { ...smtp, password: PASSWORD } },
    });
    expect(created.status).toBe(200);
    // Sealed under a key this server does not have (a start with another key before the check existed).
    const foreign = new SecretBox(KEY_C).seal(JSON.stringify({ password: "x" }), `channel_providers/${t.workspace.id}/${created.body.id}`);
    await t.ctx.db.prisma.channelProvider.update({
      where: { workspaceId_id: { workspaceId: t.workspace.id, id: created.body.id } },
      data: { secrets: foreign },
    });

    for (const path of ["/api/admin/providers", `/api/admin/providers/${created.body.id}`]) {
      const res = await request(t.url, "GET", path, { headers });
      expect(res.status, res.text).toBe(200);
      const provider = path.endsWith("providers") ? res.body.items[0] : res.body;
      expect(provider).toMatchObject({ secretsUnreadable: true, config: smtp });
      expect(provider.config.password).toBeUndefined();
    }

    // Keeping the unreadable value is not possible: the mask no longer matches anything.
    const masked = await request(t.url, "PUT", "/api/admin/providers", {
      headers,
      body: { channel: "Email", type: "Smtp", config: { password: "••••LAST" } },
    });
    expect(masked.status).toBe(400);
    expect(masked.body.error.issues).toEqual([expect.objectContaining({ path: "config.password" })]);

    const replaced = await request(t.url, "PUT", "/api/admin/providers", {
      headers,
      body: { channel: "Email", type: "Smtp", config: { password: "new-password-0123456789-NEW1" } },
    });
    expect(replaced.status, replaced.text).toBe(200);
    expect(replaced.body.secretsUnreadable).toBeUndefined();
    expect(replaced.body.config).toEqual({ ...smtp, password: "••••NEW1" });
  });
});
