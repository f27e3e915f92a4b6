// The server's configuration: one zod schema over the environment, validated at boot.
import { isIPv6 } from "node:net";
import path from "node:path";
import { z } from "zod";
import { parseOrigins } from "./lib/origins.ts";

const bool = z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1");

const originList = z.string().transform(parseOrigins);

/**
 * One host of TIDINGS_OUTBOUND_ALLOWED_HOSTS in the form a URL's hostname takes (WHATWG URL
 * parsing: lower case, punycode, IPv4 in dotted decimal, IPv6 compressed in brackets), or
 * undefined when the entry is not a bare host (a port, a scheme or a path is not part of an entry).
 * `localhost` and `localhost.` are different hosts; `::1` and `[::1]` the same.
 */
export function normalizeHost(entry: string): string | undefined {
  const text = isIPv6(entry) ? `[${entry}]` : entry;
  if (!text || /[/?#@\\\s]/.test(text)) return undefined;
  let url: URL;
  try {
    url = new URL(`http://${text}`);
  } catch {
    return undefined;
  }
  return url.port === "" && url.pathname === "/" && !text.endsWith(":") && url.hostname !== "" ? url.hostname : undefined;
}

/** Parses a comma-separated list of hosts (no ports: an entry allows every port of its host). */
function parseHosts(value: string, ctx: z.RefinementCtx): string[] {
  const hosts: string[] = [];
  for (const item of value
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
    const host = normalizeHost(item);
    if (host === undefined) {
      ctx.addIssue({
        code: "custom",
        message: `${JSON.stringify(item)} is not a host such as hooks.internal or 10.0.0.5 (no scheme, port or path)`,
      });
      return z.NEVER;
    }
    if (!hosts.includes(host)) hosts.push(host);
  }
  return hosts;
}

const EnvSchema = z.object({
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, "must be a postgres:// URL")
    .optional()
    .describe("PostgreSQL 14+ URL; without it an embedded PostgreSQL is started in TIDINGS_DATA_DIR."),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default("127.0.0.1"),
  TIDINGS_DATA_DIR: z.string().min(1).default("./.tidings"),
  TIDINGS_CONSOLE_DIR: z.string().min(1).optional().describe("The web console's built files (else: http/console.ts)."),
  TIDINGS_ROOT_KEY: z.string().min(24, "must be at least 24 characters").optional(),
  TIDINGS_SECRET_KEY: z.string().min(32, "must be at least 32 characters").optional(),
  TIDINGS_SECRET_KEY_PREVIOUS: z.string().min(32, "must be at least 32 characters").optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  TIDINGS_ROLE: z.enum(["all", "api", "worker"]).default("all"),
  TIDINGS_MIGRATE_ON_START: bool.default(true),
  TIDINGS_PRINT_KEYS: bool
    .default(false)
    .describe(
      "With DATABASE_URL, print the keys of a workspace created at start even when stdout is not a terminal (an init job whose output is read); otherwise they are printed only to a terminal.",
    ),
  TIDINGS_DB_POOL_SIZE: z.coerce.number().int().min(2).max(200).default(10),
  TIDINGS_MAX_EVENT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(32 * 1024),
  TIDINGS_MAX_REQUEST_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(500 * 1024),
  TIDINGS_MAX_BATCH_EVENTS: z.coerce.number().int().min(1).default(2500),
  TIDINGS_INGEST_RATE_LIMIT: z.coerce.number().int().min(0).default(0),
  TIDINGS_KEY_CACHE_SECONDS: z.coerce.number().min(0).max(300).default(5),
  TIDINGS_INGEST_COMMITS: z.coerce.number().int().min(1).max(32).default(1),
  TIDINGS_PUBLIC_URL: z
    .url({ protocol: /^https?$/ })
    .optional()
    .describe("Base of every link the server makes (unsubscribe links); defaults to http://HOST:PORT."),
  TIDINGS_CORS_ORIGINS: z
    .string()
    .transform((v, ctx): "*" | string[] => (v.trim() === "*" ? "*" : parseOrigins(v, ctx)))
    .default("*")
    .describe("Origins whose pages may send events from a browser; `*` (default) allows any."),
  TIDINGS_ADMIN_CORS_ORIGINS: originList
    .default([])
    .describe("Origins whose pages may call the admin API from a browser; none by default."),
  TIDINGS_OUTBOUND_ALLOWED_HOSTS: z
    .string()
    .transform(parseHosts)
    .default([])
    .describe(
      "Hosts that webhooks, providers (base URLs, FCM token endpoints) and SMTP servers may reach although they are (or resolve to) private, loopback or link-local addresses, and SMTP servers on any port.",
    ),
  TIDINGS_WEBHOOK_ALLOWED_HOSTS: z
    .string()
    .transform(parseHosts)
    .default([])
    .describe("The older name of TIDINGS_OUTBOUND_ALLOWED_HOSTS; both lists count."),
  TIDINGS_MAX_EVENT_LOOP_DELAY_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(1000)
    .describe("Answer 503 + Retry-After while the event loop lags more than this; 0 turns the guard off."),
  TIDINGS_WORKER_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(1)
    .max(100)
    .default(4)
    .describe("Background jobs a worker runs at once besides sending: the segment engine, journeys, ticks and retention."),
  TIDINGS_SEND_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(1)
    .max(100)
    .default(8)
    .describe(
      "Message senders a worker runs at once (a source has at most 4); one workspace's senders hold at most half of them, each with a database connection of its own for its slot lock (and, with delivery policies, up to 250 users' advisory locks while deciding a chunk).",
    ),
  TIDINGS_RENDER_THREADS: z.coerce
    .number()
    .int()
    .min(1)
    .max(32)
    .optional()
    .describe("Worker threads that parse and render templates (default: the cores but one, 1 to 4)."),
  TIDINGS_RENDER_TIME_LIMIT_MS: z.coerce
    .number()
    .int()
    .min(10)
    .max(10_000)
    .default(250)
    .describe("Rendering time of one message, all its fields together; past it the message fails (a preview is a 400)."),
  TIDINGS_DELIVERY_LEASE_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(3600)
    .default(30)
    .describe("A claimed delivery whose sender has not renewed its claim for this long (the worker died) is sent again (once, same id)."),
  TIDINGS_EVENT_RETENTION_DAYS: z.coerce
    .number()
    .int()
    .min(0)
    .default(0)
    .describe(
      "Delete events whose time is more than this many days ago, and segment membership history as old; 0 (default): keep forever.",
    ),
  TIDINGS_DELIVERY_RETENTION_DAYS: z.coerce
    .number()
    .int()
    .min(0)
    .default(0)
    .describe("Clear the rendered message of settled deliveries created more than this many days ago; 0 (default): keep forever."),
});

export interface Config {
  databaseUrl: string | undefined;
  port: number;
  host: string;
  dataDir: string;
  consoleDir: string | undefined;
  rootKey: string | undefined;
  secretKey: string | undefined;
  /** The key stored secrets were encrypted with before a rotation; they are re-encrypted at start. */
  previousSecretKey: string | undefined;
  logLevel: z.infer<typeof EnvSchema>["LOG_LEVEL"];
  role: "all" | "api" | "worker";
  migrateOnStart: boolean;
  /** With DATABASE_URL, print created keys even when stdout is not a terminal (they go nowhere else). */
  printKeys: boolean;
  dbPoolSize: number;
  /** Ingestion limits; `requestsPerSecond` is per workspace and process, 0 = unlimited. */
  limits: { maxEventBytes: number; maxRequestBytes: number; maxBatchEvents: number; requestsPerSecond: number };
  /** How long a looked-up key is trusted before it is checked against the database again. */
  keyCacheSeconds: number;
  /** Ingestion transactions in flight at once per process (each gathers every waiting request). */
  ingestCommits: number;
  /** Base of every link the server makes (no trailing slash); never taken from a request's Host header. */
  publicUrl: string;
  /** Browser origins allowed on the public ingestion routes (`*`: any). */
  corsOrigins: "*" | string[];
  /** Browser origins allowed on the admin routes; empty: admin answers no CORS at all. */
  adminCorsOrigins: string[];
  /**
   * Hosts (as URL hostnames, see normalizeHost) that outbound connections a workspace directs
   * (webhooks, provider base URLs, FCM token endpoints, SMTP servers) may reach although they are
   * or resolve to private, loopback or link-local addresses; any port. Empty: none.
   */
  outboundAllowedHosts: string[];
  /**
   * A claimed delivery's lease: its sender renews it every third of it while the provider works,
   * so only a delivery whose sender is gone (no renewal for this long) is claimed again.
   */
  deliveryLeaseSeconds: number;
  /** Template rendering: threads (undefined: the cores but one, 1 to 4) and each message's time budget. */
  render: { threads: number | undefined; timeLimitMs: number };
  /** Background jobs a worker process runs at once besides sending (the default lane). */
  workerConcurrency: number;
  /** Message senders a worker process runs at once (the sending lane). */
  sendConcurrency: number;
  /** Event-loop lag (ms) beyond which requests get 503 + Retry-After; 0: no guard. */
  maxEventLoopDelayMs: number;
  /**
   * Retention in days (src/retention); null: kept forever (the default). Events older than
   * `eventDays` (by event time) and segment membership history as old are deleted; settled
   * deliveries created longer ago than `deliveryDays` lose their rendered message.
   */
  retention: { eventDays: number | null; deliveryDays: number | null };
}

/** The configuration once the root and secret keys are known (environment, else credentials.json). */
export type ResolvedConfig = Config & { rootKey: string; secretKey: string };

export class ConfigError extends Error {
  override name = "ConfigError";
}

/** Parses the environment; throws a ConfigError naming each invalid variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ""));
  const parsed = EnvSchema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join("\n")}`);
  }
  const e = parsed.data;
  if (e.DATABASE_URL && (!e.TIDINGS_ROOT_KEY || !e.TIDINGS_SECRET_KEY)) {
    const missing = ["TIDINGS_ROOT_KEY", "TIDINGS_SECRET_KEY"].filter((k) => !e[k as keyof typeof e]);
    throw new ConfigError(`Invalid configuration:\n${missing.map((k) => `  ${k}: required when DATABASE_URL is set`).join("\n")}`);
  }
  return {
    databaseUrl: e.DATABASE_URL,
    port: e.PORT,
    host: e.HOST,
    dataDir: path.resolve(e.TIDINGS_DATA_DIR),
    consoleDir: e.TIDINGS_CONSOLE_DIR === undefined ? undefined : path.resolve(e.TIDINGS_CONSOLE_DIR),
    rootKey: e.TIDINGS_ROOT_KEY,
    secretKey: e.TIDINGS_SECRET_KEY,
    previousSecretKey: e.TIDINGS_SECRET_KEY_PREVIOUS,
    logLevel: e.LOG_LEVEL,
    role: e.TIDINGS_ROLE,
    migrateOnStart: e.TIDINGS_MIGRATE_ON_START,
    printKeys: e.TIDINGS_PRINT_KEYS,
    dbPoolSize: e.TIDINGS_DB_POOL_SIZE,
    limits: {
      maxEventBytes: e.TIDINGS_MAX_EVENT_BYTES,
      maxRequestBytes: e.TIDINGS_MAX_REQUEST_BYTES,
      maxBatchEvents: e.TIDINGS_MAX_BATCH_EVENTS,
      requestsPerSecond: e.TIDINGS_INGEST_RATE_LIMIT,
    },
    keyCacheSeconds: e.TIDINGS_KEY_CACHE_SECONDS,
    ingestCommits: e.TIDINGS_INGEST_COMMITS,
    publicUrl: (e.TIDINGS_PUBLIC_URL ?? `http://${/^(0\.0\.0\.0|::)$/.test(e.HOST) ? "127.0.0.1" : e.HOST}:${e.PORT}`).replace(/\/+$/, ""),
    corsOrigins: e.TIDINGS_CORS_ORIGINS,
    adminCorsOrigins: e.TIDINGS_ADMIN_CORS_ORIGINS,
    outboundAllowedHosts: [...new Set([...e.TIDINGS_OUTBOUND_ALLOWED_HOSTS, ...e.TIDINGS_WEBHOOK_ALLOWED_HOSTS])],
    deliveryLeaseSeconds: e.TIDINGS_DELIVERY_LEASE_SECONDS,
    workerConcurrency: e.TIDINGS_WORKER_CONCURRENCY,
    sendConcurrency: e.TIDINGS_SEND_CONCURRENCY,
    render: { threads: e.TIDINGS_RENDER_THREADS, timeLimitMs: e.TIDINGS_RENDER_TIME_LIMIT_MS },
    maxEventLoopDelayMs: e.TIDINGS_MAX_EVENT_LOOP_DELAY_MS,
    retention: {
      eventDays: e.TIDINGS_EVENT_RETENTION_DAYS || null,
      deliveryDays: e.TIDINGS_DELIVERY_RETENTION_DAYS || null,
    },
  };
}
