// The start-time migration runner: applies the committed migrations once, in order, safely
// from several processes, and records them the way `prisma migrate deploy` does.
import { createHash } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, inject } from "vitest";
import { migrate, readMigrations } from "../../src/db/migrate.ts";

let admin: pg.Client;
const created: string[] = [];

async function emptyDatabase(): Promise<string> {
  const name = `tidings_mig_${process.pid}_${created.length}_${Date.now()}`;
  await admin.query(`CREATE DATABASE ${name}`);
  created.push(name);
  const u = new URL(inject("adminUrl"));
  u.pathname = `/${name}`;
  return u.toString();
}

beforeAll(async () => {
  admin = new pg.Client({ connectionString: inject("adminUrl") });
  await admin.connect();
});
afterAll(async () => {
  for (const name of created) await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
});

describe("migrate", () => {
  it("applies every migration once, recording Prisma-compatible checksums", async () => {
    const url = await emptyDatabase();
    const migrations = await readMigrations();
    expect((await migrate(url)).applied).toEqual(migrations.map((m) => m.name));
    expect((await migrate(url)).applied).toEqual([]);
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    const { rows } = await c.query(`SELECT migration_name, checksum, finished_at FROM _prisma_migrations ORDER BY migration_name`);
    expect(rows.map((r) => r.migration_name)).toEqual(migrations.map((m) => m.name));
    for (const [i, r] of rows.entries()) {
      expect(r.checksum).toBe(createHash("sha256").update(migrations[i]!.sql).digest("hex"));
      expect(r.finished_at).not.toBeNull();
    }
    const tables = await c.query(`SELECT count(*)::int AS n FROM pg_tables WHERE tablename IN ('events', 'profiles', 'workspaces')`);
    expect(tables.rows[0].n).toBe(3);
    await c.end();
  });

  it("is safe when several processes start at once", async () => {
    const url = await emptyDatabase();
    const results = await Promise.all([migrate(url), migrate(url), migrate(url)]);
    const applied = results.flatMap((r) => r.applied);
    expect(applied.sort()).toEqual((await readMigrations()).map((m) => m.name).sort());
  });

  it("refuses to start over a migration that failed earlier", async () => {
    const url = await emptyDatabase();
    await migrate(url);
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    await c.query(
      `INSERT INTO _prisma_migrations (id, checksum, migration_name) VALUES ('00000000-0000-0000-0000-000000000001', 'x', '99999999999999_broken')`,
    );
    await c.end();
    await expect(migrate(url)).rejects.toThrow(/99999999999999_broken failed earlier/);
  });

  it("profile_trait_time_max gives existing profiles the newest of their trait times", async () => {
    const url = await emptyDatabase();
    const migrations = await readMigrations();
    const at = migrations.findIndex((m) => m.name.endsWith("_profile_trait_time_max"));
    expect(at).toBeGreaterThan(0);
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    for (const m of migrations.slice(0, at)) await c.query(m.sql);
    const ws = (await c.query(`INSERT INTO workspaces (id, name) VALUES (gen_random_uuid(), 'w') RETURNING id`)).rows[0].id;
    await c.query(
      `INSERT INTO profiles (workspace_id, profile_id, traits, trait_times) VALUES
         ($1, 'with-traits', '{"a": 1, "b": 2}', '{"a": 1700000000000, "b": 1800000000123}'),
         ($1, 'without', '{}', '{}')`,
      [ws],
    );
    await c.query(migrations[at]!.sql);
    const { rows } = await c.query(`SELECT profile_id, trait_time_max::text AS max FROM profiles ORDER BY profile_id`);
    expect(rows).toEqual([
      { profile_id: "with-traits", max: "1800000000123" },
      { profile_id: "without", max: "0" },
    ]);
    await c.end();
  });
});
