// Applies the committed Prisma migrations (prisma/migrations/<name>/migration.sql) at start.
// Compatible with `prisma migrate deploy`: same _prisma_migrations table, sha256 checksums and
// advisory lock key, one transaction per migration.
import { createHash, randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";

/** Prisma's own advisory lock key for migrations, so we never race a `prisma migrate deploy`. */
const PRISMA_MIGRATE_LOCK = 72707369;

/** Finds apps/api/prisma/migrations from src/db (tsx) or dist (built). */
export function migrationsDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const candidate = path.join(dir, "prisma", "migrations");
    if (existsSync(candidate)) return candidate;
    dir = path.dirname(dir);
  }
  throw new Error("prisma/migrations not found next to the server code");
}

export interface Migration {
  name: string;
  sql: string;
  checksum: string;
}

export async function readMigrations(dir = migrationsDir()): Promise<Migration[]> {
  const entries = (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name);
  entries.sort();
  const out: Migration[] = [];
  for (const name of entries) {
    const file = path.join(dir, name, "migration.sql");
    if (!existsSync(file)) continue;
    const sql = await readFile(file, "utf8");
    out.push({ name, sql, checksum: createHash("sha256").update(sql).digest("hex") });
  }
  return out;
}

export interface MigrateResult {
  applied: string[];
}

/** Applies pending migrations; safe to call from several processes at once. */
export async function migrate(databaseUrl: string, log: (msg: string) => void = () => {}): Promise<MigrateResult> {
  const migrations = await readMigrations();
  const client = new pg.Client({ connectionString: databaseUrl });
  // A lost connection fails the statement under way (and so the migration); it must not also
  // be an unhandled 'error' event.
  client.on("error", () => {});
  await client.connect();
  const applied: string[] = [];
  try {
    await client.query("SELECT pg_advisory_lock($1)", [PRISMA_MIGRATE_LOCK]);
    await client.query(`CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
      "id" VARCHAR(36) PRIMARY KEY NOT NULL,
      "checksum" VARCHAR(64) NOT NULL,
      "finished_at" TIMESTAMPTZ,
      "migration_name" VARCHAR(255) NOT NULL,
      "logs" TEXT,
      "rolled_back_at" TIMESTAMPTZ,
      "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
      "applied_steps_count" INTEGER NOT NULL DEFAULT 0
    )`);
    const { rows } = await client.query<{ migration_name: string; checksum: string; finished_at: Date | null }>(
      `SELECT migration_name, checksum, finished_at FROM "_prisma_migrations" WHERE rolled_back_at IS NULL`,
    );
    const failed = rows.find((r) => r.finished_at === null);
    if (failed) {
      throw new Error(`Migration ${failed.migration_name} failed earlier; resolve it before starting (see README).`);
    }
    const done = new Map(rows.map((r) => [r.migration_name, r.checksum]));
    for (const m of migrations) {
      const previous = done.get(m.name);
      if (previous !== undefined) {
        if (previous !== m.checksum) log(`migration ${m.name} was modified after it was applied`);
        continue;
      }
      await client.query("BEGIN");
      try {
        await client.query(m.sql);
        await client.query(
          `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, finished_at, applied_steps_count)
           VALUES ($1, $2, $3, now(), 1)`,
          [randomUUID(), m.checksum, m.name],
        );
        await client.query("COMMIT");
      } catch (err) {
        await client.query("ROLLBACK");
        throw new Error(`Migration ${m.name} failed: ${err instanceof Error ? err.message : String(err)}`);
      }
      applied.push(m.name);
      log(`applied migration ${m.name}`);
    }
  } finally {
    await client.query("SELECT pg_advisory_unlock($1)", [PRISMA_MIGRATE_LOCK]).catch(() => {});
    await client.end();
  }
  return { applied };
}
