// Creates the next migration from the difference between the committed migrations and
// prisma/schema.prisma, in Prisma's format (prisma/migrations/<UTC timestamp>_<name>/
// migration.sql), using the wasm schema engine instead of `prisma migrate dev`, which needs
// the native engine (and a database) that we do not have.
//
// Usage: pnpm --filter @tidings/api migration:new <name> [--verbose]
//
// Like `prisma migrate dev --create-only`, it only writes the file: the server applies
// pending migrations at start. Review the SQL and add anything Prisma cannot express
// (functions, triggers, …) below the generated statements before committing.

import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";

import {
  LOCKFILE_CONTENT,
  LOCKFILE_NAME,
  MIGRATION_FILE,
  MIGRATIONS_DIR,
  readMigrations,
  readSchema,
  withSchemaEngine,
} from "./schema-engine.js";

function usage(message: string): never {
  console.error(`migration:new: ${message}`);
  console.error("usage: pnpm --filter @tidings/api migration:new <name> [--verbose]");
  process.exit(2);
}

/** Same normalisation as `prisma migrate dev --name`: lower snake case, bounded length. */
function migrationSlug(raw: string): string {
  const slug = raw
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "")
    .slice(0, 200);
  if (!slug) usage(`"${raw}" is not a usable migration name`);
  return slug;
}

/** YYYYMMDDHHMMSS in UTC, the prefix Prisma uses, so directories sort in creation order. */
function timestamp(date = new Date()): string {
  return date.toISOString().replace(/\D/g, "").slice(0, 14);
}

async function main(): Promise<void> {
  const args = process.argv.slice(2).filter((arg) => arg !== "--");
  const verbose = args.includes("--verbose");
  const names = args.filter((arg) => !arg.startsWith("--"));
  if (names.length !== 1) usage("expected exactly one migration name");
  const slug = migrationSlug(names[0]!);

  const migrations = readMigrations();
  const previous = migrations.migrationDirectories.map((dir) => dir.path);
  const schema = readSchema();

  const diff = await withSchemaEngine((engine) => engine.diffMigrationsToSchema(migrations, schema), {
    verbose,
  });
  if (diff.empty) {
    console.log(
      `migration:new: nothing to do, the ${previous.length} existing migration(s) already ` +
        "match prisma/schema.prisma. No migration written.",
    );
    return;
  }

  const name = `${timestamp()}_${slug}`;
  const last = previous.at(-1);
  if (last !== undefined && name <= last) {
    // A clock behind the newest migration (or two runs in one second) must not reorder history.
    usage(`new migration ${name} would sort before or equal to the latest one, ${last}`);
  }
  const dir = join(MIGRATIONS_DIR, name);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, MIGRATION_FILE);
  writeFileSync(file, diff.script.endsWith("\n") ? diff.script : `${diff.script}\n`);

  const lockfile = join(MIGRATIONS_DIR, LOCKFILE_NAME);
  if (!existsSync(lockfile)) writeFileSync(lockfile, LOCKFILE_CONTENT);

  const cwd = process.cwd();
  console.log(`migration:new: wrote ${relative(cwd, file)}`);
  console.log(diff.script.trimEnd());
}

main().catch((error: unknown) => {
  console.error("migration:new: failed");
  console.error(error);
  process.exit(1);
});
