// The server's configuration: one zod schema over the environment, validated at boot.
import path from "node:path";
import { z } from "zod";

const bool = z
  .enum(["true", "false", "1", "0"])
  .transform((v) => v === "true" || v === "1");

const EnvSchema = z.object({
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, "must be a postgres:// URL")
    .optional()
    .describe("PostgreSQL 14+ URL; without it an embedded PostgreSQL is started in TIDINGS_DATA_DIR."),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default("127.0.0.1"),
  TIDINGS_DATA_DIR: z.string().min(1).default("./.tidings"),
  TIDINGS_ROOT_KEY: z.string().min(24, "must be at least 24 characters").optional(),
  TIDINGS_SECRET_KEY: z.string().min(32, "must be at least 32 characters").optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  TIDINGS_ROLE: z.enum(["all", "api", "worker"]).default("all"),
  TIDINGS_MIGRATE_ON_START: bool.default(true),
  TIDINGS_DB_POOL_SIZE: z.coerce.number().int().min(2).max(200).default(10),
  TIDINGS_MAX_EVENT_BYTES: z.coerce.number().int().min(1024).default(32 * 1024),
  TIDINGS_MAX_REQUEST_BYTES: z.coerce.number().int().min(1024).default(500 * 1024),
  TIDINGS_MAX_BATCH_EVENTS: z.coerce.number().int().min(1).default(2500),
  TIDINGS_INGEST_RATE_LIMIT: z.coerce.number().int().min(0).default(0),
  TIDINGS_KEY_CACHE_SECONDS: z.coerce.number().min(0).max(300).default(5),
  TIDINGS_INGEST_COMMITS: z.coerce.number().int().min(1).max(32).default(1),
});

export interface Config {
  databaseUrl: string | undefined;
  port: number;
  host: string;
  dataDir: string;
  rootKey: string | undefined;
  secretKey: string | undefined;
  logLevel: z.infer<typeof EnvSchema>["LOG_LEVEL"];
  role: "all" | "api" | "worker";
  migrateOnStart: boolean;
  dbPoolSize: number;
  /** Ingestion limits; `requestsPerSecond` is per workspace and process, 0 = unlimited. */
  limits: { maxEventBytes: number; maxRequestBytes: number; maxBatchEvents: number; requestsPerSecond: number };
  /** How long a looked-up key is trusted before it is checked against the database again. */
  keyCacheSeconds: number;
  /** Ingestion transactions in flight at once per process (each gathers every waiting request). */
  ingestCommits: number;
}

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
    throw new ConfigError(
      `Invalid configuration:\n${missing.map((k) => `  ${k}: required when DATABASE_URL is set`).join("\n")}`,
    );
  }
  return {
    databaseUrl: e.DATABASE_URL,
    port: e.PORT,
    host: e.HOST,
    dataDir: path.resolve(e.TIDINGS_DATA_DIR),
    rootKey: e.TIDINGS_ROOT_KEY,
    secretKey: e.TIDINGS_SECRET_KEY,
    logLevel: e.LOG_LEVEL,
    role: e.TIDINGS_ROLE,
    migrateOnStart: e.TIDINGS_MIGRATE_ON_START,
    dbPoolSize: e.TIDINGS_DB_POOL_SIZE,
    limits: {
      maxEventBytes: e.TIDINGS_MAX_EVENT_BYTES,
      maxRequestBytes: e.TIDINGS_MAX_REQUEST_BYTES,
      maxBatchEvents: e.TIDINGS_MAX_BATCH_EVENTS,
      requestsPerSecond: e.TIDINGS_INGEST_RATE_LIMIT,
    },
    keyCacheSeconds: e.TIDINGS_KEY_CACHE_SECONDS,
    ingestCommits: e.TIDINGS_INGEST_COMMITS,
  };
}
