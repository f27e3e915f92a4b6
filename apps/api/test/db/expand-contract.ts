// The expand/contract rule for migrations (docs/operations.md#migrations-expand-and-contract):
// while a release rolls out, replicas of the previous one run against the migrated database, so a
// migration never renames or drops a table or column, changes a column's type, or makes the
// previous release's INSERTs fail (a NOT NULL column without a default), unless it is a contract
// step: the object has been unused since an earlier migration (an earlier release), which the
// migration says in a comment the check verifies:
//
//   -- contract: <table>.<column> unused since <migration directory>
//   -- contract: <table> unused since <migration directory>
//
// The statements are read after removing comments, string literals and dollar-quoted bodies
// (functions), so text inside a function never counts.

/** One statement of a migration that a replica of the previous release could trip over. */
export interface Breaking {
  migration: string;
  /** `table` or `table.column`, as the contract comment must name it. */
  object: string;
  what: "renames" | "drops" | "changes the type of" | "adds NOT NULL without a default to" | "sets NOT NULL on";
}

export interface MigrationFile {
  name: string;
  sql: string;
}

/** The tables and columns a Prisma schema maps (database names). */
export type SchemaObjects = Map<string, Set<string>>;

/** Everything `migration` does that breaks the previous release, contract comments not considered. */
export function breakingStatements(migration: MigrationFile): Breaking[] {
  const found: Breaking[] = [];
  /** Tables this migration creates (or renames into place), as of the statement being read. */
  const created = new Set<string>();
  const flag = (object: string, what: Breaking["what"]) => {
    if (!created.has(object.split(".")[0]!)) found.push({ migration: migration.name, object, what });
  };
  for (const statement of statements(migration.sql)) {
    let m = /^create (?:unlogged )?table (?:if not exists )?([\w.]+)/.exec(statement);
    if (m) {
      created.add(bare(m[1]!));
      continue;
    }
    m = /^drop table (?:if exists )?(.+?)(?: cascade| restrict)?$/.exec(statement);
    if (m) {
      for (const table of m[1]!.split(",").map((t) => bare(t.trim()))) flag(table, "drops");
      continue;
    }
    m = /^alter table (?:if exists )?(?:only )?([\w.]+) (.*)$/.exec(statement);
    if (!m) continue;
    const table = bare(m[1]!);
    for (const action of topLevel(m[2]!, ",")) {
      let a = /^rename to ([\w.]+)$/.exec(action);
      if (a) {
        flag(table, "renames");
        created.add(bare(a[1]!)); // later changes to it in this migration are to the new table
        continue;
      }
      if (/^rename constraint /.test(action)) continue;
      a = /^rename (?:column )?(\w+) to \w+$/.exec(action);
      if (a) {
        flag(`${table}.${a[1]}`, "renames");
        continue;
      }
      if (/^drop (constraint|primary key)\b/.test(action)) continue;
      a = /^drop (?:column )?(?:if exists )?(\w+)/.exec(action);
      if (a) {
        flag(`${table}.${a[1]}`, "drops");
        continue;
      }
      a = /^alter (?:column )?(\w+) (?:set data )?type /.exec(action);
      if (a) {
        flag(`${table}.${a[1]}`, "changes the type of");
        continue;
      }
      a = /^alter (?:column )?(\w+) set not null$/.exec(action);
      if (a) {
        flag(`${table}.${a[1]}`, "sets NOT NULL on");
        continue;
      }
      if (/^add (constraint|primary key|unique|foreign key|check|exclude)\b/.test(action)) continue;
      a = /^add (?:column )?(?:if not exists )?(\w+) (.*)$/.exec(action);
      if (a && /\bnot null\b/.test(a[2]!) && !/\b(default|generated)\b/.test(a[2]!))
        flag(`${table}.${a[1]}`, "adds NOT NULL without a default to");
    }
  }
  // A table dropped or renamed away and then created or renamed into place under the same name
  // (a swap, as partitioning an existing table takes) is still there for the previous release.
  return found.filter((b) => b.object.includes(".") || !created.has(b.object));
}

/** The contract comments of a migration: object → the migration since which it is unused. */
export function contractComments(sql: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of sql.matchAll(/^\s*--\s*contract:\s*"?([\w.]+)"?\s+unused since\s+(\S+)\s*$/gim)) out.set(m[1]!.toLowerCase(), m[2]!);
  return out;
}

/**
 * Why each breaking statement of `migrations` (sorted by name) is not allowed: no contract comment,
 * or one naming a migration that is not earlier, or an object the current schema still maps.
 * `allowed` lists historic migrations by directory name (with the reason, kept by the caller).
 */
export function expandContractViolations(migrations: MigrationFile[], schema: SchemaObjects, allowed: ReadonlySet<string>): string[] {
  const names = migrations.map((m) => m.name);
  const problems: string[] = [];
  for (const [index, migration] of migrations.entries()) {
    if (allowed.has(migration.name)) continue;
    const contracts = contractComments(migration.sql);
    for (const b of breakingStatements(migration)) {
      const since = contracts.get(b.object);
      const say = `${b.migration} ${b.what} ${b.object}`;
      if (since === undefined) {
        problems.push(
          `${say}, which replicas of the previous release may still use: expand (add the new, keep the old) now and contract in a later release, with "-- contract: ${b.object} unused since <earlier migration>"`,
        );
      } else if (!names.slice(0, index).includes(since)) {
        problems.push(`${say}: its contract comment names ${since}, which is not an earlier migration`);
      } else if (stillMapped(schema, b.object)) {
        problems.push(`${say}: its contract comment says it is unused, but prisma/schema.prisma still maps ${b.object}`);
      }
    }
  }
  return problems;
}

function stillMapped(schema: SchemaObjects, object: string): boolean {
  const [table, column] = object.split(".");
  const columns = schema.get(table!);
  return columns !== undefined && (column === undefined || columns.has(column));
}

/** The tables and columns `schema.prisma` text maps (`@@map`, `@map`, else the model and field names). */
export function schemaObjects(prisma: string): SchemaObjects {
  const out: SchemaObjects = new Map();
  for (const model of prisma.matchAll(/^model (\w+) \{([\s\S]*?)^\}/gm)) {
    const body = model[2]!;
    const table = /@@map\("([^"]+)"\)/.exec(body)?.[1] ?? model[1]!;
    const columns = new Set<string>();
    for (const line of body.split("\n")) {
      const field = /^\s*(\w+)\s+\w+/.exec(line);
      if (!field) continue;
      columns.add(/@map\("([^"]+)"\)/.exec(line)?.[1] ?? field[1]!);
    }
    out.set(table, columns);
  }
  return out;
}

/** The statements of `sql`, lower-cased, without comments, literals, quotes or extra spaces. */
function statements(sql: string): string[] {
  const text = sql
    .replace(/\$(\w*)\$[\s\S]*?\$\1\$/g, " ") // dollar-quoted bodies (functions, DO blocks)
    .replace(/\/\*[\s\S]*?\*\//g, " ")
    .replace(/--[^\n]*/g, " ")
    .replace(/'(?:[^']|'')*'/g, "''")
    .replace(/"/g, "");
  return text
    .split(";")
    .map((s) => s.replace(/\s+/g, " ").trim().toLowerCase())
    .filter(Boolean);
}

/** `text` split on `separator` outside parentheses, each part trimmed. */
function topLevel(text: string, separator: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "(") depth++;
    else if (c === ")") depth--;
    else if (c === separator && depth === 0) {
      parts.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(text.slice(start).trim());
  return parts.filter(Boolean);
}

/** `public.events` → `events`. */
const bare = (name: string) => name.replace(/^public\./, "");
