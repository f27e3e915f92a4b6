// A database of a test file's own, created empty (no migration) before its tests and dropped after
// them, for tests that apply migrations one by one (`migrateUpTo`).
import pg from "pg";
import { afterAll, beforeAll, inject } from "vitest";
import { readMigrations } from "../../src/db/migrate.ts";
import { createDatabase } from "../support/app.ts";

/** Registers the file's hooks; the returned function gives the connected client. */
export function useEmptyDatabase(): () => pg.Client {
  let url: URL | undefined;
  let client: pg.Client | undefined;
  beforeAll(async () => {
    url = new URL(await createDatabase(""));
    client = new pg.Client({ connectionString: url.toString() });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
    if (!url) return;
    const admin = new pg.Client({ connectionString: inject("adminUrl") });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${url.pathname.slice(1)} WITH (FORCE)`);
    await admin.end();
  });
  return () => client!;
}

/**
 * Applies to `c` the migrations before the one whose name ends in `_${name}`; returns a function
 * applying that one (the test writes its rows in between).
 */
export async function migrateUpTo(c: pg.Client, name: string): Promise<() => Promise<unknown>> {
  const migrations = await readMigrations();
  const at = migrations.findIndex((m) => m.name.endsWith(`_${name}`));
  if (at <= 0) throw new Error(`no migration named *_${name} after the first`);
  for (const m of migrations.slice(0, at)) await c.query(m.sql);
  return () => c.query(migrations[at]!.sql);
}
