import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SecretBox } from "../../src/lib/secrets.ts";
import { providerForSending } from "../../src/messaging/providers/service.ts";
import { createTestApp, type TestApp, type TestWorkspace } from "../support/app.ts";
import { bearer, type Res, request } from "../support/http.ts";

const PATH = "/api/admin/providers";
const PASSWORD = "smtp-password-0123456789-LAST";
let t: TestApp;
let ws: TestWorkspace;
beforeAll(async () => {
  t = await createTestApp();
  ws = t.workspace;
});
afterAll(async () => {
  await t.close();
});

const put = (body: Record<string, unknown>, w: TestWorkspace = ws) =>
  request(t.url, "PUT", PATH, { headers: bearer(w.adminKey), body: { workspaceId: w.id, ...body } });
const get = (id: string, w: TestWorkspace = ws) => request(t.url, "GET", `${PATH}/${id}`, { headers: bearer(w.adminKey) });
const dbRow = (workspaceId: string, id: string) =>
  t.ctx.db.prisma.channelProvider.findUniqueOrThrow({ where: { workspaceId_id: { workspaceId, id } } });
const smtp = { host: "smtp.acme.test", port: 587, username: "mailer", from: "Acme <hello@acme.test>" };

describe("PUT /api/admin/providers", () => {
  it("stores an SMTP provider with its password encrypted and masked in the response", async () => {
    const res = await put({ channel: "Email", type: "Smtp", config: { ...smtp, password: PASSWORD } });
    expect(res.status).toBe(200);
    // The host is checked by the outbound guard at PUT: a name that does not resolve is said.
    expect(res.body.warnings).toEqual([{ path: "config.host", message: expect.stringMatching(/^smtp\.acme\.test could not be resolved/) }]);
    delete res.body.warnings;
    expect(res.body).toMatchObject({ id: expect.any(String), workspaceId: ws.id, channel: "Email", type: "Smtp" });
    expect(res.body.config).toEqual({ ...smtp, password: "••••LAST" });
    expect(res.text).not.toContain(PASSWORD);

    const row = await dbRow(ws.id, res.body.id);
    expect(JSON.stringify(row)).not.toContain(PASSWORD);
    expect(row.config).toEqual(smtp);
    expect(row.secrets).toMatch(/^v1\./);

    const got = await get(res.body.id);
    expect(got.body).toEqual(res.body);
    expect(got.text).not.toContain(PASSWORD);

    const forSending = await providerForSending(t.ctx.db.prisma, new SecretBox(t.ctx.config.secretKey!), ws.id, "Email");
    expect(forSending).toEqual({ id: res.body.id, type: "Smtp", config: { ...smtp, password: PASSWORD } });
  });

  it("keeps the stored secret when a PUT omits it or sends the mask back, and removes it with null", async () => {
    const first = await put({ channel: "Email", type: "Smtp", config: { ...smtp, password: PASSWORD } });
    const box = new SecretBox(t.ctx.config.secretKey!);
    const password = async () => (await providerForSending(t.ctx.db.prisma, box, ws.id, "Email"))?.config;

    // The stored password does not follow a new host: it must be sent with it.
    const moved = await put({ channel: "Email", type: "Smtp", config: { ...smtp, host: "smtp2.acme.test" } });
    expect(moved.status).toBe(400);
    expect(moved.body.error.issues).toEqual([
      { path: "config.host", message: expect.stringMatching(/stored password to a new destination/) },
    ]);
    const hostOnly = await put({ channel: "Email", type: "Smtp", config: { ...smtp, host: "smtp2.acme.test", password: PASSWORD } });
    expect(hostOnly.status).toBe(200);
    expect(hostOnly.body.id).toBe(first.body.id);
    expect(hostOnly.body.config).toMatchObject({ host: "smtp2.acme.test", password: "••••LAST" });
    expect(await password()).toMatchObject({ host: "smtp2.acme.test", password: PASSWORD });

    const echoed = await put({ channel: "Email", type: "Smtp", config: hostOnly.body.config });
    expect(echoed.status).toBe(200);
    expect(await password()).toMatchObject({ password: PASSWORD });

    const wrongMask = await put({ channel: "Email", type: "Smtp", config: { ...smtp, password: "••••NOPE" } });
    expect(wrongMask.status).toBe(400);
    expect(wrongMask.body.error.issues[0].path).toBe("config.password");

    const replaced = await put({ channel: "Email", type: "Smtp", config: { ...smtp, password: "short-pw" } });
    expect(replaced.body.config.password).toBe("••••");
    expect(await password()).toMatchObject({ password: "short-pw" });

    const removed = await put({ channel: "Email", type: "Smtp", config: { ...smtp, password: null } });
    expect(removed.status).toBe(200);
    expect(removed.body.config).not.toHaveProperty("password");
    expect((await dbRow(ws.id, first.body.id)).secrets).toBeNull();
  });

  it("requires a secret that is mandatory when there is none stored, and drops secrets on a type change", async () => {
    const w = await t.newWorkspace();
    const missing = await put({ channel: "Sms", type: "Twilio", config: { accountSid: "AC123", fromNumber: "+15550001" } }, w);
    expect(missing.status).toBe(400);
    expect(missing.body.error.issues[0].path).toBe("config.authToken");

    const token = "twilio-auth-token-abcdef-9876";
    const created = await put(
      { channel: "Sms", type: "Twilio", config: { accountSid: "AC123", authToken: token, fromNumber: "+15550001" } },
      w,
    );
    expect(created.status).toBe(200);
    expect(created.body.config).toEqual({ accountSid: "AC123", fromNumber: "+15550001", authToken: "••••9876" });

    const toLog = await put({ channel: "Sms", type: "Log" }, w);
    expect(toLog.body).toMatchObject({ id: created.body.id, type: "Log", config: {} });
    expect((await dbRow(w.id, created.body.id)).secrets).toBeNull();
    const back = await put({ channel: "Sms", type: "Twilio", config: { accountSid: "AC123", fromNumber: "+15550001" } }, w);
    expect(back.status).toBe(400);
    expect(back.body.error.issues[0].path).toBe("config.authToken");
  });

  it("accepts each provider type on its channel", async () => {
    const w = await t.newWorkspace();
    const serviceAccountJson = JSON.stringify({ client_email: "x@p.iam.test", private_key: "-----BEGIN PRIVATE KEY-----abc" });
    const cases = [
      { channel: "Email", type: "Log", config: {}, masked: {} },
      {
        channel: "Sms",
        type: "Twilio",
        config: { accountSid: "AC1", authToken: "tok", messagingServiceSid: "MG1", baseUrl: "http://127.0.0.1:9/twilio" },
        masked: { authToken: "••••" },
      },
      {
        channel: "MobilePush",
        type: "Fcm",
        config: { projectId: "p1", serviceAccountJson },
        masked: { serviceAccountJson: `••••${serviceAccountJson.slice(-4)}` },
      },
      { channel: "Webhook", type: "Webhook", config: { signingSecret: "whsec-0123456789abcdef" }, masked: { signingSecret: "••••cdef" } },
    ];
    for (const c of cases) {
      const res = await put({ channel: c.channel, type: c.type, config: c.config }, w);
      expect(res.status, `${c.type}: ${res.text}`).toBe(200);
      const plain = Object.fromEntries(Object.entries(c.config).filter(([k]) => !(k in c.masked)));
      expect(res.body.config).toEqual({ ...plain, ...c.masked });
    }
    const expo = await put(
      { channel: "MobilePush", type: "Expo", config: { accessToken: "expo-token-0123456789", baseUrl: "https://exp.test" } },
      w,
    );
    expect(expo.body).toMatchObject({ type: "Expo", config: { accessToken: "••••6789", baseUrl: "https://exp.test" } });
  });

  it("rejects a type the channel does not take with a 400 naming type", async () => {
    const res = await put({ channel: "Sms", type: "Smtp", config: smtp });
    expect(res.status).toBe(400);
    expect(res.body.error.issues).toEqual([{ path: "type", message: expect.stringContaining("Twilio") }]);
    const unknown = await put({ channel: "Email", type: "Mailgun", config: {} });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.issues[0].path).toBe("type");
  });

  it("validates config per type, naming the field", async () => {
    const port = await put({ channel: "Email", type: "Smtp", config: { host: "h", port: "587" } });
    expect(port.status).toBe(400);
    expect(port.body.error.issues[0].path).toBe("config.port");
    const stray = await put({ channel: "Email", type: "Smtp", config: { host: "h", port: 25, apiKey: "oops" } });
    expect(stray.status).toBe(400);
    expect(stray.body.error.issues).toEqual([{ path: "config.apiKey", message: expect.stringContaining("apiKey") }]);
    const fcm = await put({ channel: "MobilePush", type: "Fcm", config: { projectId: "p", serviceAccountJson: "not json" } });
    expect(fcm.status).toBe(400);
    expect(fcm.body.error.issues[0].path).toBe("config.serviceAccountJson");
  });

  it("upserts by id (also creating with a chosen id) and keeps one provider per channel", async () => {
    const w = await t.newWorkspace();
    const id = randomUUID();
    const created = await put({ id, channel: "Webhook", type: "Log" }, w);
    expect(created.status).toBe(200);
    expect(created.body.id).toBe(id);
    const updated = await put({ id, channel: "Webhook", type: "Webhook", config: { signingSecret: "whsec-0123456789abcdef" } }, w);
    expect(updated.body).toMatchObject({ id, type: "Webhook" });
    const byChannel = await put({ channel: "Webhook", type: "Log" }, w);
    expect(byChannel.body.id).toBe(id);

    const second = await put({ id: randomUUID(), channel: "Webhook", type: "Log" }, w);
    expect(second.status).toBe(409);
    expect(second.body.error.code).toBe("CONFLICT");
    const list = await request(t.url, "GET", PATH, { headers: bearer(w.adminKey) });
    expect(list.body.items).toHaveLength(1);
  });
});

describe("GET and DELETE /api/admin/providers", () => {
  it("lists by channel with cursor pagination", async () => {
    const w = await t.newWorkspace();
    for (const channel of ["Webhook", "Email", "MobilePush", "Sms"]) await put({ channel, type: "Log" }, w);
    const channels: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: Res = await request(t.url, "GET", `${PATH}?limit=3${cursor ? `&cursor=${cursor}` : ""}`, { headers: bearer(w.adminKey) });
      expect(res.status).toBe(200);
      expect(res.body.providers).toEqual(res.body.items);
      channels.push(...res.body.items.map((p: { channel: string }) => p.channel));
      cursor = res.body.nextCursor;
      pages++;
    } while (cursor);
    expect(channels).toEqual(["Email", "Sms", "MobilePush", "Webhook"]);
    expect(pages).toBe(2);
  });

  it("deletes (204), then 404", async () => {
    const w = await t.newWorkspace();
    const created = await put({ channel: "Email", type: "Smtp", config: { ...smtp, password: PASSWORD } }, w);
    const del = await request(t.url, "DELETE", `${PATH}/${created.body.id}`, { headers: bearer(w.adminKey) });
    expect(del.status).toBe(204);
    expect((await get(created.body.id, w)).status).toBe(404);
    const again = await request(t.url, "DELETE", `${PATH}/${created.body.id}`, { headers: bearer(w.adminKey) });
    expect(again.status).toBe(404);
  });

  it("answers 404 for an unknown id and 400 for a malformed one", async () => {
    expect((await get(randomUUID())).status).toBe(404);
    const bad = await get("nope");
    expect(bad.status).toBe(400);
    expect(bad.body.error.issues[0].path).toContain("id");
  });
});

describe("PUT /api/admin/providers: one update rule", () => {
  it("keeps config fields left out while the type stays the same; null removes an optional one", async () => {
    const w = await t.newWorkspace();
    const box = new SecretBox(t.ctx.config.secretKey);
    const created = await put({ channel: "Email", type: "Smtp", config: { ...smtp, password: PASSWORD } }, w);
    expect(created.status).toBe(200);

    expect((await put({ channel: "Email", type: "Smtp", config: { port: 2525 } }, w)).status).toBe(400);
    const portOnly = await put({ channel: "Email", type: "Smtp", config: { port: 2525, password: PASSWORD } }, w);
    expect(portOnly.status, portOnly.text).toBe(200);
    expect(portOnly.body.config).toEqual({ ...smtp, port: 2525, password: "••••LAST" });
    expect((await providerForSending(t.ctx.db.prisma, box, w.id, "Email"))?.config).toEqual({ ...smtp, port: 2525, password: PASSWORD });

    const noFrom = await put({ channel: "Email", type: "Smtp", config: { from: null } }, w);
    expect(noFrom.status, noFrom.text).toBe(200);
    const { from: _from, ...withoutFrom } = smtp;
    expect(noFrom.body.config).toEqual({ ...withoutFrom, port: 2525, password: "••••LAST" });

    // A required field cannot be removed, and a new provider needs every required field.
    const noHost = await put({ channel: "Email", type: "Smtp", config: { host: null } }, w);
    expect(noHost.status).toBe(400);
    expect(noHost.body.error.issues.map((i: { path: string }) => i.path)).toEqual(["config.host"]);
    const incomplete = await put({ channel: "Sms", type: "Twilio", config: { accountSid: "AC1", fromNumber: "+15550100" } }, w);
    expect(incomplete.status).toBe(400);
    expect(incomplete.body.error.issues.map((i: { path: string }) => i.path)).toEqual(["config.authToken"]);

    // Another type starts from nothing: the SMTP fields do not carry over.
    const log = await put({ channel: "Email", type: "Log", config: {} }, w);
    expect(log.status).toBe(200);
    expect(log.body.config).toEqual({});
  });
});
