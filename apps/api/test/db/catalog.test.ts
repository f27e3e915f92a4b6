// The schema stays distributable by workspace (PRODUCT §11, docs/scaling.md): read from the
// catalog of a database after every migration, each tenant table (one with a workspace_id
// column) has a primary key and unique indexes that lead with workspace_id — what Citus needs to
// enforce them shard by shard — and no foreign key crosses workspaces; a table without
// workspace_id is one of the few global tables the Citus plan names.
import { readFileSync } from "node:fs";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../support/app.ts";

/**
 * Tables that are not distributed by workspace_id, with their place in the Citus plan. A reference
 * table is copied to every node (foreign keys to it are allowed from anywhere); a local table stays
 * on the coordinator and is never joined with tenant tables.
 */
const GLOBAL_TABLES: Record<string, { citus: "reference" | "local"; why: string }> = {
  workspaces: { citus: "reference", why: "the tenants themselves; every tenant table's foreign key to it is a key to a reference table" },
  api_keys: {
    citus: "reference",
    why: "a key is looked up by its hash (unique across workspaces) before its workspace is known; a few rows per workspace",
  },
  server_settings: { citus: "reference", why: "settings of the installation as a whole (secret_key_check)" },
  _prisma_migrations: { citus: "local", why: "the migration runner's bookkeeping" },
};

interface Table {
  name: string;
  tenant: boolean;
}

interface Index {
  table: string;
  index: string;
  primary: boolean;
  first_column: string | null;
}

interface ForeignKey {
  name: string;
  table: string;
  references: string;
  columns: string[];
  referenced_columns: string[];
}

/** What keeps the schema of `schema` from being distributed by workspace, one sentence each. */
async function catalogProblems(db: pg.ClientBase, schema = "public"): Promise<string[]> {
  const tables = (
    await db.query<Table>(
      `SELECT c.relname AS name, EXISTS (
         SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'workspace_id' AND NOT a.attisdropped) AS tenant
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND NOT c.relispartition ORDER BY c.relname`,
      [schema],
    )
  ).rows;
  // Unique indexes (primary keys included); indkey[0] = 0 is an expression.
  const indexes = (
    await db.query<Index>(
      `SELECT t.relname AS table, i.relname AS index, x.indisprimary AS primary,
         (SELECT a.attname::text FROM pg_attribute a WHERE a.attrelid = t.oid AND a.attnum = x.indkey[0]) AS first_column
       FROM pg_index x JOIN pg_class t ON t.oid = x.indrelid JOIN pg_class i ON i.oid = x.indexrelid
       JOIN pg_namespace n ON n.oid = t.relnamespace
       WHERE n.nspname = $1 AND x.indisunique AND NOT t.relispartition ORDER BY t.relname, i.relname`,
      [schema],
    )
  ).rows;
  const foreignKeys = (
    await db.query<ForeignKey>(
      `SELECT con.conname AS name, src.relname AS table, dst.relname AS references,
         ARRAY(SELECT a.attname::text FROM unnest(con.conkey) WITH ORDINALITY k(attnum, i)
           JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum ORDER BY k.i) AS columns,
         ARRAY(SELECT a.attname::text FROM unnest(con.confkey) WITH ORDINALITY k(attnum, i)
           JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.attnum ORDER BY k.i) AS referenced_columns
       FROM pg_constraint con JOIN pg_class src ON src.oid = con.conrelid JOIN pg_class dst ON dst.oid = con.confrelid
       JOIN pg_namespace n ON n.oid = src.relnamespace
       WHERE con.contype = 'f' AND n.nspname = $1 AND con.conparentid = 0 ORDER BY src.relname, con.conname`,
      [schema],
    )
  ).rows;

  const problems: string[] = [];
  const distributed = new Set(tables.filter((t) => t.tenant && !(t.name in GLOBAL_TABLES)).map((t) => t.name));
  for (const t of tables) {
    if (!t.tenant && !(t.name in GLOBAL_TABLES))
      problems.push(`${t.name} has no workspace_id and is not a global table of the Citus plan (GLOBAL_TABLES, docs/scaling.md)`);
  }
  for (const name of distributed) {
    if (!indexes.some((i) => i.table === name && i.primary)) problems.push(`${name} has no primary key`);
  }
  for (const i of indexes) {
    if (!distributed.has(i.table) || i.first_column === "workspace_id") continue;
    const what = i.primary ? "primary key" : "unique index";
    problems.push(`${i.table}: ${what} ${i.index} leads with ${i.first_column ?? "an expression"}, not workspace_id`);
  }
  for (const fk of foreignKeys) {
    const from = distributed.has(fk.table);
    const to = distributed.has(fk.references);
    const pairs = fk.columns.map((c, k) => `${c}→${fk.referenced_columns[k]}`);
    if (from && to && !pairs.includes("workspace_id→workspace_id"))
      problems.push(`${fk.table}: foreign key ${fk.name} (${pairs.join(", ")}) to ${fk.references} does not keep workspace_id`);
    else if (from && fk.references === "workspaces" && pairs.join() !== "workspace_id→id")
      problems.push(`${fk.table}: foreign key ${fk.name} (${pairs.join(", ")}) to workspaces is not workspace_id → id`);
    else if (from && !to && GLOBAL_TABLES[fk.references]?.citus !== "reference")
      problems.push(`${fk.table}: foreign key ${fk.name} to ${fk.references}, which is not a reference table`);
    else if (!from && to) problems.push(`${fk.table}: foreign key ${fk.name} from a global table to the tenant table ${fk.references}`);
  }
  return problems;
}

let admin: pg.Client;

beforeAll(async () => {
  admin = new pg.Client({ connectionString: await createTestDatabase() });
  await admin.connect();
});
afterAll(async () => {
  await admin?.end();
});

describe("the migrated schema, read from the catalog", () => {
  it("is distributable by workspace_id: keys lead with it, no foreign key crosses workspaces", async () => {
    expect(await catalogProblems(admin)).toEqual([]);
  });

  it("has tenant tables, foreign keys between them and global tables, so the check above checks something", async () => {
    const { rows } = await admin.query<{ tenant: number; fks: number; global: string[] }>(
      `SELECT (SELECT count(DISTINCT table_name)::int FROM information_schema.columns
                WHERE table_schema = 'public' AND column_name = 'workspace_id') AS tenant,
              (SELECT count(*)::int FROM information_schema.table_constraints
                WHERE table_schema = 'public' AND constraint_type = 'FOREIGN KEY') AS fks,
              ARRAY(SELECT table_name::text FROM information_schema.tables t WHERE table_schema = 'public' AND table_type = 'BASE TABLE'
                AND NOT EXISTS (SELECT 1 FROM information_schema.columns c
                  WHERE c.table_schema = 'public' AND c.table_name = t.table_name AND c.column_name = 'workspace_id')
                ORDER BY 1) AS global`,
    );
    expect(rows[0]!.tenant).toBeGreaterThan(20);
    // The segment engine's rows of a segment have none (prisma/schema.prisma): 7 are left.
    expect(rows[0]!.fks).toBeGreaterThanOrEqual(5);
    // Every global table is classified; api_keys has workspace_id and is a reference table still.
    expect(rows[0]!.global).toEqual(
      Object.keys(GLOBAL_TABLES)
        .filter((t) => t !== "api_keys")
        .sort(),
    );
  });

  it("names every table in docs/scaling.md's Citus plan", async () => {
    const doc = readFileSync(new URL("../../../../docs/scaling.md", import.meta.url), "utf8");
    const { rows } = await admin.query<{ name: string }>(
      "SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition",
    );
    const missing = rows.map((r) => r.name).filter((name) => !doc.includes(`\`${name}\``));
    expect(missing, "tables docs/scaling.md does not place (distributed, reference or local)").toEqual([]);
  });

  it("reports a table that would not distribute, or whose foreign key crosses workspaces", async () => {
    await admin.query("BEGIN");
    try {
      await admin.query(`
        CREATE TABLE catalog_probe_by_id (id uuid PRIMARY KEY, workspace_id uuid NOT NULL REFERENCES workspaces (id), name text);
        CREATE UNIQUE INDEX catalog_probe_by_id_name ON catalog_probe_by_id (name);
        CREATE TABLE catalog_probe_keyed (workspace_id uuid NOT NULL, id uuid NOT NULL, segment_id uuid, PRIMARY KEY (workspace_id, id));
        CREATE UNIQUE INDEX catalog_probe_keyed_lower ON catalog_probe_keyed (lower(segment_id::text));
        CREATE UNIQUE INDEX catalog_probe_keyed_segment ON catalog_probe_keyed (segment_id, workspace_id);
        ALTER TABLE catalog_probe_keyed ADD CONSTRAINT catalog_probe_keyed_by_id FOREIGN KEY (id) REFERENCES catalog_probe_by_id (id);
        CREATE TABLE catalog_probe_no_key (workspace_id uuid NOT NULL, x int);
        CREATE TABLE catalog_probe_global (id int PRIMARY KEY);
        CREATE TABLE catalog_probe_wrong_ws (workspace_id uuid NOT NULL, other_workspace uuid NOT NULL, segment_id uuid NOT NULL,
          PRIMARY KEY (workspace_id, segment_id),
          FOREIGN KEY (other_workspace, segment_id) REFERENCES segments (workspace_id, id),
          FOREIGN KEY (other_workspace) REFERENCES workspaces (id));`);
      const problems = await catalogProblems(admin);
      expect(problems).toEqual([
        "catalog_probe_global has no workspace_id and is not a global table of the Citus plan (GLOBAL_TABLES, docs/scaling.md)",
        "catalog_probe_no_key has no primary key",
        "catalog_probe_by_id: unique index catalog_probe_by_id_name leads with name, not workspace_id",
        "catalog_probe_by_id: primary key catalog_probe_by_id_pkey leads with id, not workspace_id",
        "catalog_probe_keyed: unique index catalog_probe_keyed_lower leads with an expression, not workspace_id",
        "catalog_probe_keyed: unique index catalog_probe_keyed_segment leads with segment_id, not workspace_id",
        "catalog_probe_keyed: foreign key catalog_probe_keyed_by_id (id→id) to catalog_probe_by_id does not keep workspace_id",
        "catalog_probe_wrong_ws: foreign key catalog_probe_wrong_ws_other_workspace_fkey (other_workspace→id) to workspaces is not workspace_id → id",
        "catalog_probe_wrong_ws: foreign key catalog_probe_wrong_ws_other_workspace_segment_id_fkey (other_workspace→workspace_id, segment_id→id) to segments does not keep workspace_id",
      ]);
    } finally {
      await admin.query("ROLLBACK");
    }
    expect(await catalogProblems(admin)).toEqual([]);
  });
});
