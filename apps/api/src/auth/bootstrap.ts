// First start. On the embedded database, the root and secret keys are generated once into
// credentials.json; every fresh database gets a `default` workspace whose keys are shown once.
// credentials.json belongs to the embedded database of its data directory: a start with
// DATABASE_URL never writes it, and a key from the environment never overwrites a saved one.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { type Config, ConfigError, type ResolvedConfig } from "../config.ts";
import type { Db } from "../db/client.ts";
import { sql } from "../db/sql.ts";
import { createWorkspace } from "./service.ts";
import { errorText } from "../lib/errors.ts";

export interface Credentials {
  rootKey?: string;
  secretKey?: string;
  workspaceId?: string;
  workspaceName?: string;
  writeKey?: string;
  adminApiKey?: string;
}

export const credentialsPath = (config: Config) => path.join(config.dataDir, "credentials.json");

export async function readCredentials(config: Config): Promise<Credentials> {
  const file = credentialsPath(config);
  if (!existsSync(file)) return {};
  try {
    return JSON.parse(await readFile(file, "utf8")) as Credentials;
  } catch (err) {
    throw new ConfigError(
      `${file} is not readable JSON (${errorText(err)}). It holds the keys of the ` +
        "embedded database in this TIDINGS_DATA_DIR: repair it from a backup rather than deleting it.",
    );
  }
}

async function writeCredentials(config: Config, creds: Credentials) {
  await mkdir(config.dataDir, { recursive: true });
  await writeFile(credentialsPath(config), `${JSON.stringify(creds, null, 2)}\n`, { mode: 0o600 });
}

/**
 * The root and secret keys: from the environment when set (required with DATABASE_URL), else
 * those saved in credentials.json, generated and saved there on the embedded database's first
 * start. The file is written only to add a key it lacks, never to replace one.
 */
export async function resolveSecrets(config: Config): Promise<ResolvedConfig> {
  if (config.rootKey && config.secretKey) return { ...config, rootKey: config.rootKey, secretKey: config.secretKey };
  if (config.databaseUrl)
    throw new ConfigError("Invalid configuration:\n  TIDINGS_ROOT_KEY, TIDINGS_SECRET_KEY: required when DATABASE_URL is set");
  const saved = await readCredentials(config);
  const generated: Credentials = {};
  if (!saved.rootKey) generated.rootKey = `tdr_${randomBytes(32).toString("base64url")}`;
  if (!saved.secretKey) generated.secretKey = randomBytes(32).toString("base64url");
  if (Object.keys(generated).length) await writeCredentials(config, { ...saved, ...generated });
  return {
    ...config,
    rootKey: config.rootKey ?? saved.rootKey ?? generated.rootKey!,
    secretKey: config.secretKey ?? saved.secretKey ?? generated.secretKey!,
  };
}

/** Lock id so two replicas starting together create one default workspace. */
const BOOTSTRAP_LOCK = 7_461_736;

/**
 * Creates the `default` workspace when the database has none and returns its keys (for the
 * caller to show once); on the embedded database they are also saved to credentials.json.
 */
export async function ensureDefaultWorkspace(config: Config, db: Db): Promise<Credentials | null> {
  const client = await db.pool.connect();
  try {
    await client.query(sql`SELECT pg_advisory_lock(${BOOTSTRAP_LOCK})`);
    if ((await db.prisma.workspace.count()) > 0) return null;
    const created = await createWorkspace(db.prisma, "default");
    const keys: Credentials = {
      workspaceId: created.workspace.id,
      workspaceName: created.workspace.name,
      writeKey: created.writeKey,
      adminApiKey: created.adminApiKey,
    };
    if (!config.databaseUrl) await writeCredentials(config, { ...(await readCredentials(config)), ...keys });
    return keys;
  } finally {
    await client.query(sql`SELECT pg_advisory_unlock(${BOOTSTRAP_LOCK})`).catch(() => {});
    client.release();
  }
}

/** Where the default workspace's keys can be found again, or null when nowhere (DATABASE_URL). */
export async function savedKeysPath(config: Config): Promise<string | null> {
  if (config.databaseUrl) return null;
  return (await readCredentials(config)).adminApiKey ? credentialsPath(config) : null;
}
