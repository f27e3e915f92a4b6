// Guards the committed migrations (prisma/migrations) against drifting from the schema
// Prisma describes (prisma/schema.prisma): replaying every migration on an empty database
// must produce exactly the tables, columns, indexes, enums and foreign keys of the schema,
// or the Prisma client would be generated for a database that does not exist.
//
// Runs offline and without a database server: the wasm schema engine replays the migrations
// on an in-memory PGlite "shadow database" (scripts/schema-engine.ts). When this fails after
// a schema change, run `pnpm --filter @tidings/api migration:new <name>` and commit the result.
//
// Hand-written SQL in the migrations (the tidings_merge_* functions appended to the init
// migration) does not need filtering: the engine's PostgreSQL describer covers what a Prisma
// schema can express (tables, enums, indexes, constraints, sequences, views, extensions
// behind a preview flag) and never reads functions, so they neither appear in the replayed
// schema nor produce a DROP in the diff. The first test below checks exactly that, since the
// functions are in the replayed migrations. Their behaviour is tested at the bottom.

import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

import { PGlite } from "@electric-sql/pglite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { LOCKFILE_NAME, MIGRATION_FILE, MIGRATIONS_DIR, readMigrations, readSchema, WasmSchemaEngine } from "../scripts/schema-engine.js";

// Compiling the 5 MB engine and starting PGlite takes a few seconds each.
const SLOW = 30_000;

const migrations = readMigrations();
const schema = readSchema();

describe("prisma/migrations", () => {
  let engine: WasmSchemaEngine;

  beforeAll(async () => {
    engine = await WasmSchemaEngine.open();
  }, SLOW);

  afterAll(async () => {
    await engine?.close();
  });

  it("is in Prisma migrate format, for PostgreSQL", () => {
    expect(migrations.migrationDirectories.length).toBeGreaterThan(0);
    for (const dir of migrations.migrationDirectories) {
      expect(dir.path).toMatch(/^\d{14}_[a-z0-9_]+$/);
    }
    const lockfile = join(MIGRATIONS_DIR, LOCKFILE_NAME);
    expect(existsSync(lockfile)).toBe(true);
    expect(readFileSync(lockfile, "utf8")).toMatch(/^provider = "postgresql"$/m);
  });

  it(
    "produces exactly the schema in schema.prisma (no migration missing)",
    async () => {
      const diff = await engine.diffMigrationsToSchema(migrations, schema);
      // On failure, show the SQL of the missing migration rather than `false !== true`.
      expect(diff.empty, `migrations are behind schema.prisma; missing SQL:\n${diff.script}`).toBe(true);
    },
    SLOW,
  );

  it(
    "would notice a schema change that has no migration",
    async () => {
      // Same schema plus one model: if the check above could not see this, it proves nothing.
      const probe = 'model DriftProbe {\n  id Int @id\n\n  @@map("drift_probe")\n}\n';
      const changed = {
        files: schema.files.map((file) => ({ ...file, content: `${file.content}\n${probe}` })),
      };
      const diff = await engine.diffMigrationsToSchema(migrations, changed);
      expect(diff.empty).toBe(false);
      expect(diff.script).toContain('CREATE TABLE "drift_probe"');
    },
    SLOW,
  );
});

describe("tidings_merge_traits / tidings_merge_trait_times (hand-written in the migrations)", () => {
  let db: PGlite;

  beforeAll(async () => {
    db = await PGlite.create();
    for (const dir of migrations.migrationDirectories) {
      const file = dir.migrationFile.content;
      if (file.tag !== "ok") throw new Error(`cannot read ${dir.path}/${MIGRATION_FILE}`);
      await db.exec(file.value);
    }
  }, SLOW);

  afterAll(async () => {
    await db?.close();
  });

  /** Runs both functions with the same arguments, as ingestion does. */
  async function merge(curTraits: unknown, curTimes: unknown, newTraits: unknown, newTimes: unknown) {
    const { rows } = await db.query<{ traits: unknown; times: unknown }>(
      `SELECT tidings_merge_traits($1::jsonb, $2::jsonb, $3::jsonb, $4::jsonb) AS traits,
              tidings_merge_trait_times($2::jsonb, $4::jsonb) AS times`,
      [curTraits, curTimes, newTraits, newTimes].map((v) => (v === null ? null : JSON.stringify(v))),
    );
    return rows[0];
  }

  it("keeps the value with the latest event time per key; a tie goes to the new value", async () => {
    const result = await merge(
      { plan: "pro", name: "Ada", city: "Paris" },
      { plan: 200, name: 100, city: 100 },
      { plan: "free", name: "Ada L.", email: "ada@example.com", city: "Lyon" },
      { plan: 150, name: 300, email: 150, city: 100 },
    );
    expect(result).toEqual({
      traits: { plan: "pro", name: "Ada L.", city: "Lyon", email: "ada@example.com" },
      times: { plan: 200, name: 300, city: 100, email: 150 },
    });
  });

  it("treats a missing current time as -infinity and NULL arguments as {}", async () => {
    expect(await merge({ a: 1 }, {}, { a: 2 }, { a: 5 })).toEqual({ traits: { a: 2 }, times: { a: 5 } });
    expect(await merge(null, null, { a: 1 }, { a: 5 })).toEqual({ traits: { a: 1 }, times: { a: 5 } });
    expect(await merge({ a: 1 }, { a: 5 }, null, null)).toEqual({ traits: { a: 1 }, times: { a: 5 } });
  });

  it("stores JSON null values like any other value", async () => {
    expect(await merge({ a: 1 }, { a: 5 }, { a: null }, { a: 6 })).toEqual({
      traits: { a: null },
      times: { a: 6 },
    });
  });
});
