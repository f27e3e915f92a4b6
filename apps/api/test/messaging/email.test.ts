// EmailSender against a real SMTP server on 127.0.0.1 (smtp-server with AUTH), each arrived
// message parsed with mailparser.
import net from "node:net";
import { type ParsedMail, simpleParser } from "mailparser";
import { SMTPServer, type SMTPServerOptions } from "smtp-server";
import { afterEach, describe, expect, it } from "vitest";
import { EmailSender } from "../../src/messaging/channels/email.ts";
import type { SmtpSenderConfig } from "../../src/messaging/channels/email-message.ts";
import type { EmailRendered, OutgoingMessage } from "../../src/messaging/channels/types.ts";
import { renderEmail } from "../support/render.ts";
import { loopback } from "../support/outbound.ts";

const USER = "tidings";
const PASSWORD = "s3cret-pa55";

interface Arrived {
  mail: ParsedMail;
  rcptTo: string[];
  mailFrom: string | undefined;
}
interface TestSmtp {
  port: number;
  arrived: Arrived[];
  stats: { connections: number; open: number; inData: number; maxInData: number };
  close(): Promise<void>;
}

const smtpError = (code: number, text: string) => Object.assign(new Error(text), { responseCode: code });

async function startSmtp(
  hooks: Partial<Pick<SMTPServerOptions, "onRcptTo">> & { dataDelayMs?: number; dropInData?: boolean } = {},
): Promise<TestSmtp> {
  const arrived: Arrived[] = [];
  const sockets = new Set<net.Socket>();
  const stats = { connections: 0, open: 0, inData: 0, maxInData: 0 };
  const server = new SMTPServer({
    disabledCommands: ["STARTTLS"],
    allowInsecureAuth: true,
    authMethods: ["PLAIN", "LOGIN"],
    logger: false,
    onConnect(_session, callback) {
      stats.connections++;
      stats.open++;
      callback();
    },
    onClose() {
      stats.open--;
    },
    onAuth(auth, _session, callback) {
      if (auth.username === USER && auth.password === PASSWORD) callback(null, { user: auth.username });
      else callback(smtpError(535, "5.7.8 Authentication credentials invalid"));
    },
    ...(hooks.onRcptTo ? { onRcptTo: hooks.onRcptTo } : {}),
    onData(stream, session, callback) {
      stats.inData++;
      stats.maxInData = Math.max(stats.maxInData, stats.inData);
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        // The connection lost with the message in hand, no reply given.
        if (hooks.dropInData) for (const socket of sockets) socket.destroy();
        setTimeout(() => {
          stats.inData--;
          simpleParser(Buffer.concat(chunks)).then(
            (mail) => {
              arrived.push({
                mail,
                rcptTo: session.envelope.rcptTo.map((r) => r.address),
                mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : undefined,
              });
              callback(null, "2.0.0 queued as TEST");
            },
            (err: Error) => callback(err),
          );
        }, hooks.dataDelayMs ?? 0);
      });
    },
  });
  server.server.on("connection", (socket: net.Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.server.address() as net.AddressInfo).port;
  return { port, arrived, stats, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
async function smtp(hooks: Parameters<typeof startSmtp>[0] = {}) {
  const s = await startSmtp(hooks);
  cleanups.push(s.close);
  return s;
}
function sender(options: Partial<ConstructorParameters<typeof EmailSender>[0]> = {}) {
  const s = new EmailSender({ ...loopback, connectionTimeoutMs: 2_000, greetingTimeoutMs: 1_000, socketTimeoutMs: 3_000, ...options });
  cleanups.push(() => s.close());
  return s;
}
const config = (port: number, extra: Partial<SmtpSenderConfig> = {}): SmtpSenderConfig => ({
  host: "127.0.0.1",
  port,
  secure: false,
  username: USER,
  password: PASSWORD,
  from: "Acme Default <default@acme.test>",
  ...extra,
});
const rendered = (extra: Partial<EmailRendered> = {}): EmailRendered => ({
  from: "Acme <hello@acme.test>",
  subject: "Hello",
  html: "<p>Hello</p>",
  text: "Hello",
  ...extra,
});
const message = (deliveryId: string, extra: Partial<OutgoingMessage<EmailRendered>> = {}): OutgoingMessage<EmailRendered> => ({
  deliveryId,
  workspaceId: "w1",
  userId: "u1",
  to: "ada@example.test",
  rendered: rendered(),
  ...extra,
});
/** The raw value of a header as it arrived (mailparser decodes some of them into objects). */
const rawHeader = (mail: ParsedMail, name: string) =>
  mail.headerLines
    .find((h) => h.key === name.toLowerCase())
    ?.line.replace(/^[^:]+:\s*/, "")
    .replace(/\r?\n\s+/g, " ");

describe("EmailSender over SMTP", () => {
  it("delivers a rendered template as multipart/alternative with every header, hostile traits inert", async () => {
    const server = await smtp();
    const hostile = "<script>alert(1)</script>";
    const email = await renderEmail(
      {
        type: "Email",
        from: "{{ workspace.name }} <hello@acme.test>",
        subject: "Hi {{ user.firstName }} — {{ user.company }}",
        body: '<h1>Hello {{ user.firstName }}</h1><p>Note: {{ user.note }}</p><p>{{ user.if }}</p><a href="{{ unsubscribe_url }}">Unsubscribe</a>',
        replyTo: "support@acme.test",
        cc: "cc@acme.test",
        bcc: "audit@acme.test",
        headers: { "X-Campaign": "welcome-{{ user.id }}" },
      },
      {
        user: { id: "u1", firstName: hostile, company: "Tom & Jerry", note: "{{ 7 | plus: 1 }}", if: "{% if true %}evaluated{% endif %}" },
        workspace: { id: "w1", name: "Acme" },
        unsubscribe_url: "https://mail.acme.test/unsub?token=abc&g=1",
      },
    );
    const unsubscribeUrl = "https://mail.acme.test/api/public/subscriptions/unsubscribe?token=tok123";

    const out = await sender().send([message("d-123", { rendered: email, unsubscribeUrl })], config(server.port));

    expect(out).toEqual([{ status: "sent", providerMessageId: "<d-123@tidings>" }]);
    expect(server.arrived).toHaveLength(1);
    const { mail, rcptTo, mailFrom } = server.arrived[0]!;
    expect(mailFrom).toBe("hello@acme.test");
    expect(rcptTo.sort()).toEqual(["ada@example.test", "audit@acme.test", "cc@acme.test"]);
    expect(mail.from?.value).toEqual([{ name: "Acme", address: "hello@acme.test" }]);
    expect(rawHeader(mail, "To")).toBe("ada@example.test");
    expect(rawHeader(mail, "Cc")).toBe("cc@acme.test");
    expect(rawHeader(mail, "Bcc")).toBeUndefined(); // envelope only
    // The subject is text: not HTML-escaped, and a trait's markup stays as typed.
    expect(mail.subject).toBe(`Hi ${hostile} — Tom & Jerry`);
    expect(rawHeader(mail, "Reply-To")).toBe("support@acme.test");
    expect(mail.messageId).toBe("<d-123@tidings>");
    expect(rawHeader(mail, "List-Unsubscribe")).toBe(`<${unsubscribeUrl}>`);
    expect(rawHeader(mail, "List-Unsubscribe-Post")).toBe("List-Unsubscribe=One-Click");
    expect(rawHeader(mail, "X-Campaign")).toBe("welcome-u1");
    expect(rawHeader(mail, "Content-Type")).toMatch(/^multipart\/alternative;/);

    const html = String(mail.html);
    expect(html).toContain("<h1>Hello &lt;script&gt;alert(1)&lt;/script&gt;</h1>");
    expect(html).not.toContain("<script>");
    expect(html).toContain("<p>Note: {{ 7 | plus: 1 }}</p>");
    expect(html).toContain("<p>{% if true %}evaluated{% endif %}</p>");
    expect(html).toContain('href="https://mail.acme.test/unsub?token=abc&amp;g=1"');
    // The text part is plain text: entities decoded, the link spelled out, nothing evaluated.
    expect(mail.text).toContain(`HELLO ${hostile.toUpperCase()}`);
    expect(mail.text).toContain("Note: {{ 7 | plus: 1 }}");
    expect(mail.text).toContain("{% if true %}evaluated{% endif %}");
    expect(mail.text).toContain("Unsubscribe [https://mail.acme.test/unsub?token=abc&g=1]");
    expect(mail.text).not.toContain("&lt;");
  });

  it("falls back to the provider's from when the template's renders empty, and keeps the Message-ID on a resend", async () => {
    const server = await smtp();
    const s = sender();
    const again = message("d-resend", { rendered: rendered({ from: "  " }) });
    expect((await s.send([again], config(server.port)))[0]).toMatchObject({ status: "sent" });
    expect((await s.send([again], config(server.port)))[0]).toMatchObject({ status: "sent" });
    const defaultFrom = [{ name: "Acme Default", address: "default@acme.test" }];
    expect(server.arrived.map((a) => a.mail.from?.value)).toEqual([defaultFrom, defaultFrom]);
    expect(server.arrived.map((a) => a.mail.messageId)).toEqual(["<d-resend@tidings>", "<d-resend@tidings>"]);
    // Without any sender at all the message is refused before connecting.
    const none = await s.send([message("d-nofrom", { rendered: rendered({ from: "" }) })], config(server.port, { from: undefined }));
    expect(none[0]).toMatchObject({ status: "failed", reason: expect.stringMatching(/no sender/) });
  });

  it("fails when the server refuses the credentials", async () => {
    const server = await smtp();
    const out = await sender().send([message("d-auth")], config(server.port, { password: "wrong" }));
    expect(out[0]).toMatchObject({ status: "failed", reason: expect.stringContaining("535") });
    expect(server.arrived).toHaveLength(0);
  });

  it("fails with the server's reason for a recipient it answers 550, and sends the others of the batch", async () => {
    const server = await smtp({
      onRcptTo(address, _session, callback) {
        if (address.address === "ghost@example.test") callback(smtpError(550, "5.1.1 <ghost@example.test>: no such user"));
        else callback();
      },
    });
    const out = await sender().send([message("d-550", { to: "ghost@example.test" }), message("d-ok")], config(server.port));
    expect(out[0]).toMatchObject({ status: "failed", reason: expect.stringMatching(/^550 .*no such user/) });
    expect(out[1]).toMatchObject({ status: "sent" });
    expect(server.arrived.map((a) => a.mail.messageId)).toEqual(["<d-ok@tidings>"]);
  });

  it("fails when the recipient is refused even though a Cc was accepted", async () => {
    const server = await smtp({
      onRcptTo(address, _session, callback) {
        callback(address.address === "ghost@example.test" ? smtpError(550, "5.1.1 no such user") : undefined);
      },
    });
    const out = await sender().send(
      [message("d-partial", { to: "ghost@example.test", rendered: rendered({ cc: "cc@acme.test" }) })],
      config(server.port),
    );
    expect(out[0]).toMatchObject({ status: "failed", reason: expect.stringContaining("no such user") });
  });

  it("retries when the server answers 451", async () => {
    const server = await smtp({ onRcptTo: (_a, _s, callback) => callback(smtpError(451, "4.3.0 try again later")) });
    const out = await sender().send([message("d-451")], config(server.port));
    expect(out[0]).toMatchObject({ status: "retry", reason: expect.stringMatching(/^451 .*try again later/) });
  });

  it("retries when nothing listens on the port", async () => {
    const probe = net.createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const port = (probe.address() as net.AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const out = await sender().send([message("d-refused")], config(port));
    expect(out[0]).toMatchObject({ status: "retry", reason: expect.stringMatching(/ECONNREFUSED|ECONNECTION|ESOCKET/) });
  });

  it("retries when the server never greets, within the greeting timeout", async () => {
    const sockets: net.Socket[] = [];
    const silent = net.createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    cleanups.push(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    });
    const started = Date.now();
    const out = await sender({ greetingTimeoutMs: 500 }).send([message("d-silent")], config((silent.address() as net.AddressInfo).port));
    expect(out[0]).toMatchObject({ status: "retry", reason: expect.stringMatching(/ETIMEDOUT|greeting/i) });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  describe("transport trouble reaches the log and the reason", () => {
    const logged = () => {
      const lines: [string, string][] = [];
      return { lines, log: (level: "warn" | "error", line: string) => void lines.push([level, line]) };
    };

    it("a server dropping every connection before its greeting: retried, the connection error in the reason, logged once", async () => {
      const dropping = net.createServer((socket) => socket.destroy());
      await new Promise<void>((resolve) => dropping.listen(0, "127.0.0.1", resolve));
      cleanups.push(() => new Promise((resolve) => dropping.close(() => resolve())));
      const port = (dropping.address() as net.AddressInfo).port;
      const { lines, log } = logged();
      // The pool tries the message on new connections (with backoff) before it gives up.
      const out = await sender({ log }).send([message("d-dropped")], config(port));
      expect(out[0]).toMatchObject({ status: "retry", reason: expect.stringContaining("Connection closed unexpectedly") });
      expect(lines).toEqual([["warn", `email: SMTP 127.0.0.1:${port}: Connection closed unexpectedly`]]);
    });

    it("a server dropping the connection in the middle of a message: retried, and logged", async () => {
      const server = await smtp({ dropInData: true });
      const { lines, log } = logged();
      const out = await sender({ log }).send([message("d-mid")], config(server.port));
      expect(out[0]).toMatchObject({ status: "retry", reason: expect.stringMatching(/^ECONNECTION: .*Connection closed unexpectedly/) });
      expect(lines).toContainEqual(["warn", `email: SMTP 127.0.0.1:${server.port}: Connection closed unexpectedly`]);
    });

    it("a refused recipient is the message's failure, not the provider's trouble: nothing logged", async () => {
      const server = await smtp({ onRcptTo: (_a, _s, callback) => callback(smtpError(550, "5.1.1 no such user")) });
      const { lines, log } = logged();
      const out = await sender({ log }).send([message("d-nouser")], config(server.port));
      expect(out[0]).toMatchObject({ status: "failed", reason: expect.stringMatching(/^550 /) });
      expect(lines).toEqual([]);
    });
  });

  describe("header injection", () => {
    const cases: [string, Partial<EmailRendered>, RegExp][] = [
      ["CRLF in the subject", { subject: "Hi\r\nBcc: victim@evil.test" }, /Subject/],
      ["LF in the from", { from: "Acme <hello@acme.test>\nX-Evil: 1" }, /From/],
      ["CR in Reply-To", { replyTo: "a@acme.test\rBcc: victim@evil.test" }, /Reply-To/],
      ["CRLF in a custom header value", { headers: { "X-Note": "ok\r\nBcc: victim@evil.test" } }, /X-Note/],
      ["a custom header name with a colon", { headers: { "X-A: 1\r\nBcc": "x" } }, /invalid header name/],
      ["a custom header overriding Bcc", { headers: { bcc: "victim@evil.test" } }, /set by the sender/],
    ];
    it.each(cases)("refuses %s as a permanent failure, sending nothing", async (_name, fields, reason) => {
      const server = await smtp();
      const out = await sender().send([message("d-inject", { rendered: rendered(fields) })], config(server.port));
      expect(out[0]).toMatchObject({ status: "failed", reason: expect.stringMatching(reason) });
      expect(server.arrived).toHaveLength(0);
    });

    it("refuses a trait that smuggles a line break into the rendered subject", async () => {
      const server = await smtp();
      const email = await renderEmail(
        { type: "Email", from: "a@acme.test", subject: "Hi {{ user.name }}", body: "<p>x</p>" },
        { user: { id: "u1", name: "Ada\r\nBcc: victim@evil.test" }, workspace: { id: "w", name: "W" }, unsubscribe_url: "" },
      );
      const out = await sender().send([message("d-trait", { rendered: email })], config(server.port));
      expect(out[0]).toMatchObject({ status: "failed", reason: expect.stringMatching(/header injection refused: Subject/) });
      expect(server.arrived).toHaveLength(0);
    });

    it("refuses a recipient that is not a single bare address", async () => {
      const server = await smtp();
      const out = await sender().send([message("d-to", { to: "ada@example.test, victim@evil.test" })], config(server.port));
      expect(out[0]).toMatchObject({ status: "failed", reason: expect.stringMatching(/invalid recipient/) });
      expect(server.arrived).toHaveLength(0);
    });
  });

  it("sends a batch with at most `concurrency` messages in flight, outcomes in order, none timing out in a queue", async () => {
    const server = await smtp({
      dataDelayMs: 600,
      onRcptTo(address, _session, callback) {
        callback(address.address.startsWith("bad") ? smtpError(550, "5.1.1 no such user") : undefined);
      },
    });
    const batch = Array.from({ length: 12 }, (_, i) =>
      message(`d-batch-${i}`, { to: i % 4 === 3 ? `bad${i}@example.test` : `u${i}@example.test` }),
    );
    // 12 messages at 600 ms each, 3 at a time, take ~2.4 s: more than the per-message limit, so
    // handing the whole batch to the pool at once would time out its tail. The limit leaves each
    // message 1.2 s besides its 600 ms (a loaded CI machine once took more than 500 ms).
    const out = await sender({ concurrency: 3, sendTimeoutMs: 1_800 }).send(batch, config(server.port));
    expect(out.map((o) => o.status)).toEqual(batch.map((m) => (m.to.startsWith("bad") ? "failed" : "sent")));
    expect(server.arrived).toHaveLength(9);
    expect(server.stats.maxInData).toBeGreaterThan(1);
    expect(server.stats.maxInData).toBeLessThanOrEqual(3);
    expect(server.stats.connections).toBeLessThanOrEqual(3);
  });

  it("reuses one pool per provider config, a new one when the config changes, and closes them all", async () => {
    const server = await smtp();
    // A socket timeout longer than the test: only close() can end the idle pooled connection.
    const s = sender({ concurrency: 1, socketTimeoutMs: 30_000 });
    await s.send([message("d-p1")], config(server.port));
    await s.send([message("d-p2")], config(server.port));
    expect(server.stats.connections).toBe(1);
    // Another default from does not change the connection; other credentials do.
    await s.send([message("d-p3")], config(server.port, { from: "other@acme.test" }));
    expect(server.stats.connections).toBe(1);
    const other = await s.send([message("d-p4")], config(server.port, { password: "wrong" }));
    expect(other[0]).toMatchObject({ status: "failed" });
    expect(server.stats.connections).toBe(2);
    expect(server.stats.open).toBeGreaterThan(0);
    await s.close();
    await expect.poll(() => server.stats.open, { timeout: 2_000 }).toBe(0);
    expect(server.arrived).toHaveLength(3);
  });
});
