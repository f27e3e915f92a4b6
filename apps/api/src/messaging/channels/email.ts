// The Email channel over SMTP (nodemailer): one pooled transport per provider config, one
// multipart/alternative message per delivery (email-message.ts), the SMTP answer mapped to sent / failed / retry.
// A pool's connection errors reach the log, and the reason of a send the pool gave up on. The
// server is connected to at an address the outbound guard resolved and allowed (src/outbound/guard.ts),
// on an SMTP port, and credentials are sent only over TLS, unless the host is allow-listed.
import { createHash } from "node:crypto";
import { isIP } from "node:net";
import { format } from "node:util";
import nodemailer, { type NodemailerError, type SendMailOptions, type SMTPPoolSentMessageInfo, type Transporter } from "nodemailer";
import { type OutboundGuard, OutboundRefusedError, withoutPrivateAddresses } from "../../outbound/index.ts";
import { buildMail, Refused, type SmtpSenderConfig } from "./email-message.ts";
import { sendEach } from "./send-each.ts";
import type {
  ChannelSender,
  MayGo,
  EmailRendered,
  OutgoingMessage,
  PermanentFailure,
  SenderLog,
  SendOutcome,
  TransientFailure,
} from "./types.ts";

export interface EmailSenderOptions {
  /** Every SMTP host and port goes through it. */
  guard: OutboundGuard;
  /** Messages of one batch in flight at once, and SMTP connections per provider. Default 5. */
  concurrency?: number;
  /** Waiting for the TCP (or TLS) connection. Default 5 000 ms. */
  connectionTimeoutMs?: number;
  /** Waiting for the server's greeting once connected. Default 5 000 ms. */
  greetingTimeoutMs?: number;
  /** Socket inactivity during a session. Default 15 000 ms. */
  socketTimeoutMs?: number;
  /** Whole send of one message, queueing in the pool included; a server trickling replies is cut off. Default 60 000 ms. */
  sendTimeoutMs?: number;
  /** Right-hand side of the Message-ID `<deliveryId@domain>`. Default `tidings`. */
  messageIdDomain?: string;
  /** Pooled transports kept (one per distinct provider config); the least recently used is closed beyond it. Default 50. */
  maxTransports?: number;
  /**
   * Where a pool's connection and transport errors go (nodemailer keeps them to its own logger
   * otherwise); a message repeated within a minute is logged once per provider config.
   */
  log?: SenderLog;
}

const MAX_REASON = 1_000;
const LOG_REPEAT_MS = 60_000;

type Pool = Transporter<SMTPPoolSentMessageInfo>;

/** What a pool reported: its last connection or transport error, and the last one logged. */
interface PoolTrouble {
  last: { message: string; at: number } | null;
  /** A message repeated sooner than LOG_REPEAT_MS after it was logged is not logged again. */
  logged: { message: string; at: number } | null;
}
/** One provider config's pooled transport. */
interface PoolEntry {
  transport: Pool;
  trouble: PoolTrouble;
}

/** nodemailer's logger (bunyan style) for one pool: its pool and connection warnings and errors go to `report`. */
function poolLogger(report: (level: "warn" | "error", message: string) => void) {
  const quiet = () => {};
  const at =
    (level: "warn" | "error") =>
    (data: { component?: string; err?: unknown } | undefined, ...args: unknown[]) => {
      // The mailer's own entries echo each failed send, which its outcome reports already.
      if (data?.component === "mail") return;
      report(level, data?.err instanceof Error ? data.err.message : format(...args));
    };
  return { trace: quiet, debug: quiet, info: quiet, warn: at("warn"), error: at("error"), fatal: at("error") };
}

const failed = (reason: string): PermanentFailure => ({ status: "failed", reason: withoutPrivateAddresses(reason).slice(0, MAX_REASON) });
const retry = (reason: string): TransientFailure => ({ status: "retry", reason: withoutPrivateAddresses(reason).slice(0, MAX_REASON) });

/** The outcome of a nodemailer error: a 5xx reply or a refused message fails, the rest is retried. */
export function outcomeOfError(err: NodemailerError): PermanentFailure | TransientFailure {
  const reason = err.response?.trim() || err.message;
  if (typeof err.responseCode === "number") {
    // RFC 5321: 5yz is a permanent rejection, 4yz transient; 503 (bad sequence) is the session's
    // state, not the message's, so a new connection may succeed.
    return err.responseCode >= 500 && err.responseCode !== 503 ? failed(reason) : retry(reason);
  }
  if (err.name === "AbortError" || err.code === "EABORT") return retry("timed out sending the message");
  switch (err.code) {
    // Credentials missing or refused, a malformed envelope or message, a bad config: a retry
    // sends the same thing to the same server.
    case "EAUTH":
    case "EENVELOPE":
    case "EMESSAGE":
    case "ECONFIG":
    case "EMAXRECIPIENTS":
      return failed(reason);
    // Connection refused/reset, DNS, TLS, timeouts, protocol hiccups.
    default:
      return retry(err.code ? `${err.code}: ${reason}` : reason);
  }
}

/** Stable key of what a connection depends on (hashed: the password is part of it); one workspace's pool is never another's. */
function transportKey(workspaceId: string, address: string, config: SmtpSenderConfig): string {
  const { host, port, secure, username, password } = config;
  return createHash("sha256")
    .update(JSON.stringify([workspaceId, address, host, port, secure ?? null, username ?? null, password ?? null]))
    .digest("hex");
}

/**
 * A failure the pool reported vaguely ("Reached maximum number of retries after connection was
 * closed", a timeout) gets the connection error the pool saw meanwhile; an SMTP reply says enough.
 */
function withTrouble(outcome: PermanentFailure | TransientFailure, err: NodemailerError, trouble: PoolTrouble, since: number) {
  const last = trouble.last;
  if (typeof err.responseCode === "number" || !last || last.at < since || outcome.reason.includes(last.message)) return outcome;
  return { ...outcome, reason: `${outcome.reason} (last transport error: ${last.message})`.slice(0, MAX_REASON) };
}

/**
 * Where and how a provider's pool connects: to `address` (resolved and allowed by the guard) with
 * the configured host as TLS server name; credentials only over TLS — implicit (`secure`) or
 * STARTTLS, which is then required — unless the host is allow-listed (`allowListed`).
 */
export function smtpConnection(config: SmtpSenderConfig, address: string, allowListed: boolean) {
  const secure = config.secure ?? config.port === 465;
  return {
    host: address,
    // The name certificates are checked against (an IP literal has none to send).
    ...(isIP(config.host) ? {} : { servername: config.host }),
    port: config.port,
    secure,
    ...(config.username ? { auth: { user: config.username, pass: config.password ?? "" } } : {}),
    ...(config.username && !secure && !allowListed ? { requireTLS: true } : {}),
  };
}

export class EmailSender implements ChannelSender<EmailRendered, SmtpSenderConfig> {
  readonly #options: Required<Omit<EmailSenderOptions, "log" | "guard">> & Pick<EmailSenderOptions, "log">;
  readonly #guard: OutboundGuard;
  /** Insertion order is recency: a used transport is moved to the end. */
  readonly #transports = new Map<string, PoolEntry>();

  constructor({ guard, ...options }: EmailSenderOptions) {
    this.#guard = guard;
    this.#options = {
      concurrency: 5,
      connectionTimeoutMs: 5_000,
      greetingTimeoutMs: 5_000,
      socketTimeoutMs: 15_000,
      sendTimeoutMs: 60_000,
      messageIdDomain: "tidings",
      maxTransports: 50,
      ...options,
    };
    this.#options.concurrency = Math.max(1, this.#options.concurrency);
  }

  /** Remembers a pool's trouble and logs it, unless the same message was logged within a minute. */
  #trouble(trouble: PoolTrouble, config: SmtpSenderConfig, level: "warn" | "error", message: string) {
    const now = Date.now();
    trouble.last = { message, at: now };
    if (trouble.logged && trouble.logged.message === message && now - trouble.logged.at < LOG_REPEAT_MS) return;
    trouble.logged = { message, at: now };
    this.#options.log?.(level, `email: SMTP ${config.host}:${config.port}: ${message}`);
  }

  /**
   * The pool of one workspace's config at an address the guard allowed. The server is connected to
   * at that address (its name is the TLS server name); credentials require TLS unless the host is
   * allow-listed (STARTTLS refused by the server fails the send rather than log in in clear).
   */
  #transport(workspaceId: string, address: string, config: SmtpSenderConfig): PoolEntry {
    const key = transportKey(workspaceId, address, config);
    let entry = this.#transports.get(key);
    if (entry) {
      this.#transports.delete(key);
    } else {
      const o = this.#options;
      const trouble: PoolTrouble = { last: null, logged: null };
      const report = (level: "warn" | "error", message: string) => this.#trouble(trouble, config, level, message);
      const transport: Pool = nodemailer.createTransport({
        ...smtpConnection(config, address, this.#guard.allowed(config.host)),
        pool: true,
        maxConnections: o.concurrency,
        maxMessages: 100,
        idleTimeout: 60_000,
        connectionTimeout: o.connectionTimeoutMs,
        greetingTimeout: o.greetingTimeoutMs,
        socketTimeout: o.socketTimeoutMs,
        dnsTimeout: o.connectionTimeoutMs,
        logger: poolLogger(report),
      });
      // A pooled transport may report an error outside any send; unhandled it would crash the process.
      transport.on("error", (err: Error) => report("error", err.message));
      entry = { transport, trouble };
      while (this.#transports.size >= o.maxTransports) {
        const [oldest, old] = this.#transports.entries().next().value as [string, PoolEntry];
        this.#transports.delete(oldest);
        old.transport.close();
      }
    }
    this.#transports.set(key, entry);
    return entry;
  }

  async #sendOne(message: OutgoingMessage<EmailRendered>, config: SmtpSenderConfig, address: string): Promise<SendOutcome> {
    let mail: SendMailOptions;
    try {
      mail = buildMail(message, config, this.#options.messageIdDomain);
    } catch (err) {
      if (err instanceof Refused) return failed(err.message);
      throw err;
    }
    const started = Date.now();
    let pool: PoolEntry | undefined;
    try {
      pool = this.#transport(message.workspaceId, address, config);
      const info = await pool.transport.sendMail({ ...mail, signal: AbortSignal.timeout(this.#options.sendTimeoutMs) });
      // Some recipients may be refused while others (Cc, Bcc) were accepted: the delivery is to `to`.
      const to = message.to.trim().toLowerCase();
      if (info.rejected.some((address) => address.toLowerCase() === to)) {
        const why = info.rejectedErrors?.find((e) => e.recipient?.toLowerCase() === to);
        return why ? outcomeOfError(why) : failed(`recipient ${message.to} rejected: ${info.response}`);
      }
      return { status: "sent", providerMessageId: info.messageId };
    } catch (err) {
      if (!(err instanceof Error)) throw err;
      const outcome = outcomeOfError(err as NodemailerError);
      return pool ? withTrouble(outcome, err as NodemailerError, pool.trouble, started) : outcome;
    }
  }

  async send(messages: OutgoingMessage<EmailRendered>[], config: SmtpSenderConfig, mayGo?: MayGo): Promise<SendOutcome[]> {
    let address: string;
    try {
      address = await this.#address(config);
    } catch (err) {
      const outcome =
        err instanceof OutboundRefusedError
          ? failed(`SMTP server refused: ${err.message}`)
          : retry(`SMTP server ${config.host} could not be resolved (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
      return messages.map(() => outcome);
    }
    return sendEach(messages, (message) => this.#sendOne(message, config, address), this.#options.concurrency, mayGo);
  }

  /** The address to connect to: the host's first the guard allows, on a port it allows. */
  async #address(config: SmtpSenderConfig): Promise<string> {
    const refused = this.#guard.smtpRefusal(config.host, config.port);
    if (refused) throw new OutboundRefusedError(refused);
    const [first] = await this.#guard.addresses(config.host);
    if (!first) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${config.host}`), { code: "ENOTFOUND" });
    return first.address;
  }

  async close(): Promise<void> {
    const entries = [...this.#transports.values()];
    this.#transports.clear();
    for (const entry of entries) entry.transport.close();
  }
}
