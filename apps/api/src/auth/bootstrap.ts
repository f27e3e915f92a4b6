// First start: the embedded setup generates its root and secret keys, and every fresh database
// gets a `default` workspace whose keys are printed once and saved to credentials.json.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Config } from "../config.ts";
import type { Db } from "../db/client.ts";
import { createWorkspace } from "./service.ts";

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
  return JSON.parse(await readFile(file, "utf8")) as Credentials;
}

async function writeCredentials(config: Config, creds: Credentials) {
  await mkdir(config.dataDir, { recursive: true });
  await writeFile(credentialsPath(config), `${JSON.stringify(creds, null, 2)}\n`, { mode: 0o600 });
}

/** Fills in the root and secret keys from credentials.json, generating them on first start. */
export async function resolveSecrets(config: Config): Promise<Config> {
  if (config.rootKey && config.secretKey) return config;
  const creds = await readCredentials(config);
  const next = {
    ...creds,
    rootKey: config.rootKey ?? creds.rootKey ?? `tdr_${randomBytes(32).toString("base64url")}`,
    secretKey: config.secretKey ?? creds.secretKey ?? randomBytes(32).toString("base64url"),
  };
  if (next.rootKey !== creds.rootKey || next.secretKey !== creds.secretKey) await writeCredentials(config, next);
  return { ...config, rootKey: next.rootKey, secretKey: next.secretKey };
}

/** Lock id so two replicas starting together create one default workspace. */
const BOOTSTRAP_LOCK = 7_461_736;

/** Creates the `default` workspace when the database has none; returns its keys when it did. */
export async function ensureDefaultWorkspace(config: Config, db: Db): Promise<Credentials | null> {
  const client = await db.pool.connect();
  try {
    await client.query("SELECT pg_advisory_lock($1)", [BOOTSTRAP_LOCK]);
    if ((await db.prisma.workspace.count()) > 0) return null;
    const created = await createWorkspace(db.prisma, "default");
    const creds: Credentials = {
      ...(await readCredentials(config)),
      workspaceId: created.workspace.id,
      workspaceName: created.workspace.name,
      writeKey: created.writeKey,
      adminApiKey: created.adminApiKey,
    };
    await writeCredentials(config, creds);
    return creds;
  } finally {
    await client.query("SELECT pg_advisory_unlock($1)", [BOOTSTRAP_LOCK]).catch(() => {});
    client.release();
  }
}
