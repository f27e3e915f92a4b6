// Starts one PostgreSQL for the whole run (embedded, or TEST_DATABASE_URL when set) and
// migrates a template database that every test file clones.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import pg from "pg";
import { startEmbeddedPostgres } from "../../src/db/embedded.ts";
import { migrate } from "../../src/db/migrate.ts";
import { migrateJobs } from "../../src/jobs/index.ts";

export const TEMPLATE_DB = `tidings_template_${process.pid}`;

declare module "vitest" {
  export interface ProvidedContext {
    adminUrl: string;
    templateDb: string;
  }
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

export default async function setup(project: TestProject) {
  let adminUrl = process.env.TEST_DATABASE_URL;
  let stopEmbedded: (() => Promise<void>) | null = null;
  let dataDir: string | null = null;
  if (!adminUrl) {
    dataDir = await mkdtemp(path.join(os.tmpdir(), "tidings-test-pg-"));
    const embedded = await startEmbeddedPostgres({
      dataDir,
      // Tests need no durability across power loss; the crash test runs its own server.
      postgresFlags: ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=300"],
    });
    adminUrl = embedded.adminUrl;
    stopEmbedded = embedded.stop;
  }
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DB}`);
  await admin.query(`CREATE DATABASE ${TEMPLATE_DB}`);
  await migrate(withDatabase(adminUrl, TEMPLATE_DB));
  // graphile-worker's schema too, so that starting a test app's job layer only checks it.
  await migrateJobs(withDatabase(adminUrl, TEMPLATE_DB));
  project.provide("adminUrl", adminUrl);
  project.provide("templateDb", TEMPLATE_DB);

  return async () => {
    const { rows } = await admin.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE $1 OR datname = $2`, [
      `tidings_test_${process.pid}_%`,
      TEMPLATE_DB,
    ]);
    for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`).catch(() => {});
    await admin.end();
    await stopEmbedded?.();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  };
}
