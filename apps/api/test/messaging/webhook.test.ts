// The Webhook sender against a real HTTP receiver on 127.0.0.1 that verifies each request with
// the `standardwebhooks` library, as a customer's endpoint would.
import { randomBytes, randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parseRetryAfter } from "../../src/messaging/channels/provider-http.ts";
import type { OutgoingMessage, WebhookRendered } from "../../src/messaging/channels/types.ts";
import { forbiddenAddressKind, OutboundGuard, type OutboundGuardOptions, type Resolver } from "../../src/outbound/guard.ts";
import { signWebhook, WebhookSender, type WebhookSenderOptions, webhookSigningKey } from "../../src/messaging/channels/webhook.ts";

interface Received {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}
type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void;

const SECRET = `whsec_${randomBytes(24).toString("base64")}`;
let server: http.Server;
let base: string;
let port: number;
let received: Received[] = [];
const routes = new Map<string, Handler>();
const senders: WebhookSender[] = [];
const hanging = new Set<http.ServerResponse>();

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const path = req.url ?? "/";
      received.push({ method: req.method ?? "", path, headers: req.headers, body });
      const handler = routes.get(path.split("?")[0]!);
      if (handler) handler(req, res, body);
      else res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});
afterEach(async () => {
  received = [];
  routes.clear();
  for (const res of hanging) res.destroy();
  hanging.clear();
  await Promise.all(senders.splice(0).map((s) => s.close()));
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

type SenderOptions = Partial<Omit<WebhookSenderOptions, "guard">> & { allowedHosts?: string[] } & OutboundGuardOptions;
const sender = ({ allowedHosts = ["127.0.0.1"], resolver, dnsCacheMs, ...options }: SenderOptions = {}) => {
  const guard = new OutboundGuard(allowedHosts, { ...(resolver ? { resolver } : {}), ...(dnsCacheMs !== undefined ? { dnsCacheMs } : {}) });
  const s = new WebhookSender({ guard, timeoutMs: 2000, ...options });
  senders.push(s);
  return s;
};
const message = (
  rendered: Partial<WebhookRendered> & { url: string },
  deliveryId: string = randomUUID(),
): OutgoingMessage<WebhookRendered> => ({
  deliveryId,
  workspaceId: randomUUID(),
  userId: "user-1",
  to: rendered.url,
  rendered: { method: "POST", ...rendered },
});
/** `secret: null` sends without a signing secret. */
const sendOne = async (
  s: WebhookSender,
  rendered: Partial<WebhookRendered> & { url: string },
  secret: string | null = SECRET,
  id?: string,
) => {
  const [outcome] = await s.send([message(rendered, id)], secret === null ? {} : { signingSecret: secret });
  return outcome!;
};
const resolverOf =
  (table: Record<string, string[]>): Resolver =>
  async (host) => {
    const addresses = table[host];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" });
    return addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  };

describe("Standard Webhooks signing", () => {
  it("signs each request so that the standardwebhooks library verifies it; webhook-id is the delivery id", async () => {
    const deliveryId = randomUUID();
    const body = JSON.stringify({ event: "signed", text: "héllo ✓" });
    const before = Math.floor(Date.now() / 1000);
    const outcome = await sendOne(sender(), { url: `${base}/hook?x=1`, body, headers: { "X-Custom": "yes" } }, SECRET, deliveryId);
    expect(outcome).toEqual({ status: "sent" });
    expect(received).toHaveLength(1);
    const r = received[0]!;
    expect(r).toMatchObject({ method: "POST", path: "/hook?x=1", body });
    expect(r.headers["webhook-id"]).toBe(deliveryId);
    const ts = Number(r.headers["webhook-timestamp"]);
    expect(ts).toBeGreaterThanOrEqual(before);
    expect(ts).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
    expect(r.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(r.headers["content-type"]).toBe("application/json");
    expect(r.headers["x-custom"]).toBe("yes");
    expect(new Webhook(SECRET).verify(r.body, r.headers as Record<string, string>)).toEqual(JSON.parse(body));
    // The verification can fail: another secret, or a changed body, is rejected.
    expect(() => new Webhook(`whsec_${randomBytes(24).toString("base64")}`).verify(r.body, r.headers as Record<string, string>)).toThrow();
    expect(() => new Webhook(SECRET).verify(`${r.body} `, r.headers as Record<string, string>)).toThrow();
  });

  it("a plain-string secret is its UTF-8 bytes (verifiable as whsec_ + base64 of them, or raw)", async () => {
    const plain = "söme-plain-secret-0123456789";
    const outcome = await sendOne(sender(), { url: `${base}/hook`, body: "{}" }, plain);
    expect(outcome.status).toBe("sent");
    const r = received[0]!;
    const headers = r.headers as Record<string, string>;
    expect(() => new Webhook(`whsec_${Buffer.from(plain, "utf8").toString("base64")}`).verify(r.body, headers)).not.toThrow();
    expect(() => new Webhook(Buffer.from(plain, "utf8"), { format: "raw" }).verify(r.body, headers)).not.toThrow();
    // Not the base64-decoding of the plain string (the library's default for a prefix-less secret).
    expect(() => new Webhook(plain).verify(r.body, headers)).toThrow();
  });

  it("signs exactly as the library's own signer, bodiless requests over the empty string", async () => {
    const key = webhookSigningKey(SECRET);
    const lib = new Webhook(SECRET);
    for (const body of ["", "{}", "ünïcödé ✓ \n", "x".repeat(10_000)]) {
      expect(signWebhook(key, "msg_1", 1_700_000_000, body)).toBe(lib.sign("msg_1", new Date(1_700_000_000_000), body));
    }
    const outcome = await sendOne(sender(), { url: `${base}/get`, method: "GET" });
    expect(outcome.status).toBe("sent");
    const r = received[0]!;
    expect(r.method).toBe("GET");
    expect(r.headers["content-type"]).toBeUndefined();
    expect(() => lib.verify("", r.headers as Record<string, string>)).not.toThrow();
  });

  it("keeps a template's Content-Type, drops its framing and signature headers, sends unsigned without a secret", async () => {
    const s = sender();
    const outcome = await sendOne(s, {
      url: `${base}/hook`,
      method: "PUT",
      body: "a=1",
      headers: {
        "Content-Type": "application/x-www-form-urlencoded",
        Host: "evil.example",
        "Webhook-Id": "forged",
        "Content-Length": "999",
      },
    });
    expect(outcome.status).toBe("sent");
    const r = received[0]!;
    expect(r.method).toBe("PUT");
    expect(r.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    expect(r.headers.host).toBe(`127.0.0.1:${port}`);
    expect(r.headers["webhook-id"]).not.toBe("forged");
    expect(r.body).toBe("a=1");

    expect((await sendOne(s, { url: `${base}/hook`, body: "{}" }, null)).status).toBe("sent");
    expect(received[1]!.headers["webhook-id"]).toBeDefined();
    expect(received[1]!.headers["webhook-signature"]).toBeUndefined();
  });

  it("a whsec_ secret that is not base64 fails every message without a request", async () => {
    const outcome = await sendOne(sender(), { url: `${base}/hook`, body: "{}" }, "whsec_not*base64");
    expect(outcome).toMatchObject({ status: "failed", reason: expect.stringMatching(/signing secret/) });
    expect(received).toHaveLength(0);
  });

  it("answers one outcome per message, in order", async () => {
    routes.set("/gone", (_req, res) => res.writeHead(410).end());
    const s = sender({ concurrency: 3 });
    const paths = ["/a", "/gone", "/b", "/gone", "/c"];
    const outcomes = await s.send(
      paths.map((p) => message({ url: `${base}${p}`, body: "{}" })),
      { signingSecret: SECRET },
    );
    expect(outcomes.map((o) => o.status)).toEqual(["sent", "failed", "sent", "failed", "sent"]);
  });
});

describe("SSRF guard", () => {
  it("classifies addresses, IPv4-mapped forms included", () => {
    expect(forbiddenAddressKind("127.0.0.1")).toBe("loopback");
    expect(forbiddenAddressKind("::1")).toBe("loopback");
    expect(forbiddenAddressKind("::ffff:127.0.0.1")).toBe("loopback");
    expect(forbiddenAddressKind("::ffff:a9fe:a9fe")).toBe("link-local");
    expect(forbiddenAddressKind("10.1.2.3")).toBe("private");
    expect(forbiddenAddressKind("172.31.255.255")).toBe("private");
    expect(forbiddenAddressKind("192.168.0.1")).toBe("private");
    expect(forbiddenAddressKind("fd12::1")).toBe("private");
    expect(forbiddenAddressKind("169.254.169.254")).toBe("link-local");
    expect(forbiddenAddressKind("fe80::1")).toBe("link-local");
    expect(forbiddenAddressKind("0.0.0.0")).toBe("unspecified");
    expect(forbiddenAddressKind("::")).toBe("unspecified");
    expect(forbiddenAddressKind("100.64.0.1")).toBe("shared (CGNAT)");
    expect(forbiddenAddressKind("224.0.0.1")).toBe("multicast");
    expect(forbiddenAddressKind("ff02::1")).toBe("multicast");
    for (const ok of ["8.8.8.8", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "::ffff:8.8.8.8"]) {
      expect(forbiddenAddressKind(ok)).toBeUndefined();
    }
  });

  it("refuses 127.0.0.1 when it is not allow-listed, and sends when it is", async () => {
    const refused = await sendOne(sender({ allowedHosts: [] }), { url: `${base}/hook`, body: "{}" });
    expect(refused).toEqual({ status: "failed", reason: expect.stringMatching(/127\.0\.0\.1 is a loopback address/) });
    expect(received).toHaveLength(0);
    expect((await sendOne(sender({ allowedHosts: ["127.0.0.1"] }), { url: `${base}/hook`, body: "{}" })).status).toBe("sent");
    expect(received).toHaveLength(1);
  });

  it("refuses an IPv4-mapped IPv6 literal of an allow-listed address (the list matches hosts exactly)", async () => {
    const outcome = await sendOne(sender(), { url: `http://[::ffff:127.0.0.1]:${port}/mapped`, body: "{}" });
    expect(outcome).toMatchObject({ status: "failed", reason: expect.stringMatching(/::ffff:7f00:1.* loopback address/) });
    expect(received).toHaveLength(0);
  });

  it("refuses a host name that resolves to a loopback address unless the name is listed", async () => {
    // The system resolver: `localhost` is 127.0.0.1 / ::1, but only 127.0.0.1 is listed.
    const viaSystem = await sendOne(sender(), { url: `http://localhost:${port}/hook`, body: "{}" });
    expect(viaSystem).toMatchObject({
      status: "failed",
      reason: expect.stringMatching(/localhost resolves to a loopback address/),
    });
    expect(received).toHaveLength(0);
    // Listing the name lets the resolved address through: the request really goes to it.
    const resolver = resolverOf({ "hooks.test": ["127.0.0.1"] });
    const listed = await sendOne(sender({ allowedHosts: ["hooks.test"], resolver }), {
      url: `http://hooks.test:${port}/named`,
      body: "{}",
    });
    expect(listed.status).toBe("sent");
    expect(received.map((r) => [r.path, r.headers.host])).toEqual([["/named", `hooks.test:${port}`]]);
  });

  it("refuses a name resolving to a private address, or to any forbidden address among public ones", async () => {
    const resolver = resolverOf({ "intranet.test": ["10.0.0.7"], "mixed.test": ["192.0.2.10", "127.0.0.1"] });
    const s = sender({ resolver });
    expect(await sendOne(s, { url: "http://intranet.test/hook", body: "{}" })).toMatchObject({
      status: "failed",
      reason: expect.stringMatching(/intranet\.test resolves to a private address/),
    });
    expect(await sendOne(s, { url: "https://intranet.test/hook", body: "{}" })).toMatchObject({
      status: "failed",
      reason: expect.stringMatching(/intranet\.test resolves to a private address/),
    });
    expect(await sendOne(s, { url: `http://mixed.test:${port}/hook`, body: "{}" })).toMatchObject({
      status: "failed",
      reason: expect.stringMatching(/mixed\.test resolves to a loopback address/),
    });
  });

  it("checks the address the connection uses: a resolver answering differently later cannot slip through", async () => {
    let calls = 0;
    const rebinding: Resolver = async () => [{ address: calls++ === 0 ? "192.0.2.10" : "127.0.0.1", family: 4 }];
    const s = sender({ resolver: rebinding, dnsCacheMs: 0, timeoutMs: 500 });
    // Whichever answer the connection gets, it never reaches the loopback receiver.
    const first = await sendOne(s, { url: `http://rebind.test:${port}/hook`, body: "{}" });
    const second = await sendOne(s, { url: `http://rebind.test:${port}/hook`, body: "{}" });
    expect(second).toMatchObject({ status: "failed", reason: expect.stringMatching(/rebind\.test resolves to a loopback address/) });
    expect(first.status).not.toBe("sent");
    expect(received).toHaveLength(0);
  });

  it("refuses redirects from an allowed host to a disallowed one", async () => {
    const resolver = resolverOf({ "rebind.test": ["127.0.0.1"] });
    routes.set("/to-metadata", (_req, res) => res.writeHead(307, { location: "http://169.254.169.254/latest/meta-data/" }).end());
    routes.set("/to-name", (_req, res) => res.writeHead(302, { location: `http://rebind.test:${port}/landing` }).end());
    routes.set("/to-alias", (_req, res) => res.writeHead(308, { location: `http://[::ffff:127.0.0.1]:${port}/landing` }).end());
    const s = sender({ resolver, timeoutMs: 1000 });
    expect(await sendOne(s, { url: `${base}/to-metadata`, body: "{}" })).toEqual({
      status: "failed",
      reason: expect.stringMatching(
        /redirect to http:\/\/169\.254\.169\.254\/latest\/meta-data\/ refused: 169\.254\.169\.254 is a link-local address/,
      ),
    });
    expect(await sendOne(s, { url: `${base}/to-name`, body: "{}" })).toEqual({
      status: "failed",
      reason: expect.stringMatching(/redirect to http:\/\/rebind\.test:\d+\/landing refused: rebind\.test resolves to a loopback address/),
    });
    expect(await sendOne(s, { url: `${base}/to-alias`, body: "{}" })).toMatchObject({
      status: "failed",
      reason: expect.stringMatching(/loopback/),
    });
    expect(received.map((r) => r.path)).toEqual(["/to-metadata", "/to-name", "/to-alias"]);
  });

  it("refuses non-http schemes, and redirects to them", async () => {
    const s = sender();
    for (const url of ["ftp://127.0.0.1/x", "file:///etc/passwd", "gopher://127.0.0.1:70/"]) {
      expect(await sendOne(s, { url, body: "{}" })).toMatchObject({ status: "failed", reason: expect.stringMatching(/scheme/) });
    }
    routes.set("/to-file", (_req, res) => res.writeHead(302, { location: "file:///etc/passwd" }).end());
    expect(await sendOne(s, { url: `${base}/to-file`, body: "{}" })).toMatchObject({
      status: "failed",
      reason: expect.stringMatching(/scheme file:/),
    });
    expect(await sendOne(s, { url: "not a url", body: "{}" })).toMatchObject({
      status: "failed",
      reason: expect.stringMatching(/invalid webhook URL/),
    });
  });
});

describe("redirects", () => {
  it("follows allowed redirects, re-signing; 307 keeps method and body, 303 turns into a bodiless GET", async () => {
    routes.set("/r307", (_req, res) => res.writeHead(307, { location: "/r303" }).end());
    routes.set("/r303", (_req, res) => res.writeHead(303, { location: `${base}/final` }).end());
    const deliveryId = randomUUID();
    const outcome = await sendOne(sender(), { url: `${base}/r307`, body: '{"a":1}' }, SECRET, deliveryId);
    expect(outcome).toEqual({ status: "sent" });
    expect(received.map((r) => [r.method, r.path, r.body])).toEqual([
      ["POST", "/r307", '{"a":1}'],
      ["POST", "/r303", '{"a":1}'],
      ["GET", "/final", ""],
    ]);
    for (const r of received) {
      expect(r.headers["webhook-id"]).toBe(deliveryId);
      expect(() => new Webhook(SECRET).verify(r.body, r.headers as Record<string, string>)).not.toThrow();
    }
  });

  it("fails after maxRedirects", async () => {
    routes.set("/loop", (_req, res) => res.writeHead(302, { location: "/loop" }).end());
    const outcome = await sendOne(sender({ maxRedirects: 2 }), { url: `${base}/loop`, body: "{}" });
    expect(outcome).toMatchObject({ status: "failed", reason: expect.stringMatching(/more than 2 times/) });
    expect(received).toHaveLength(3);
  });
});

describe("outcomes", () => {
  it("2xx → sent; 404 and 410 → failed with the status", async () => {
    routes.set("/accepted", (_req, res) => res.writeHead(202, { "content-type": "text/plain" }).end("queued"));
    routes.set("/missing", (_req, res) => res.writeHead(404).end("no such hook"));
    routes.set("/gone", (_req, res) => res.writeHead(410).end());
    const s = sender();
    expect(await sendOne(s, { url: `${base}/accepted`, body: "{}" })).toEqual({ status: "sent" });
    expect(await sendOne(s, { url: `${base}/missing`, body: "{}" })).toEqual({ status: "failed", reason: "webhook answered HTTP 404" });
    expect(await sendOne(s, { url: `${base}/gone`, body: "{}" })).toEqual({ status: "failed", reason: "webhook answered HTTP 410" });
  });

  it("500 → retry; 503 with Retry-After → retry with retryAfterMs", async () => {
    routes.set("/boom", (_req, res) => res.writeHead(500).end());
    routes.set("/busy", (_req, res) => res.writeHead(503, { "retry-after": "3" }).end());
    const s = sender();
    expect(await sendOne(s, { url: `${base}/boom`, body: "{}" })).toEqual({ status: "retry", reason: "webhook answered HTTP 500" });
    expect(await sendOne(s, { url: `${base}/busy`, body: "{}" })).toEqual({
      status: "retry",
      reason: "webhook answered HTTP 503",
      retryAfterMs: 3000,
    });
  });

  it("429 honours Retry-After (seconds or an HTTP date); 408 → retry", async () => {
    const at = new Date(Date.now() + 60_000).toUTCString();
    routes.set("/slow-down", (_req, res) => res.writeHead(429, { "retry-after": "7" }).end());
    routes.set("/slow-down-date", (_req, res) => res.writeHead(429, { "retry-after": at }).end());
    routes.set("/req-timeout", (_req, res) => res.writeHead(408).end());
    const s = sender();
    expect(await sendOne(s, { url: `${base}/slow-down`, body: "{}" })).toEqual({
      status: "retry",
      reason: "webhook answered HTTP 429",
      retryAfterMs: 7000,
    });
    const dated = await sendOne(s, { url: `${base}/slow-down-date`, body: "{}" });
    expect(dated).toMatchObject({ status: "retry" });
    expect((dated as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(55_000);
    expect((dated as { retryAfterMs: number }).retryAfterMs).toBeLessThanOrEqual(60_000);
    expect(await sendOne(s, { url: `${base}/req-timeout`, body: "{}" })).toEqual({ status: "retry", reason: "webhook answered HTTP 408" });
    expect(parseRetryAfter("soon")).toBeUndefined();
  });

  it("a receiver that does not answer in time → retry", async () => {
    routes.set("/hang", (_req, res) => void hanging.add(res));
    const started = Date.now();
    const outcome = await sendOne(sender({ timeoutMs: 300 }), { url: `${base}/hang`, body: "{}" });
    expect(outcome).toMatchObject({ status: "retry", reason: expect.stringMatching(/timed out after 300 ms/) });
    // undici enforces it with coarse (~1 s resolution) timers: later than 300 ms, far sooner than a hang.
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("a refused connection → retry", async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const outcome = await sendOne(sender(), { url: `http://127.0.0.1:${deadPort}/hook`, body: "{}" });
    expect(outcome).toMatchObject({ status: "retry", reason: expect.stringMatching(/ECONNREFUSED/) });
  });
});
