// The embedded cluster is created the same whatever the environment's locale: with no LANG (a
// minimal host, `env -i`), initdb made a SQL_ASCII cluster, which measures varchar lengths in
// bytes (a valid messageId of 60 non-ASCII characters failed its commit with a 500) and refuses
// JSON escapes of non-ASCII characters.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { type EmbeddedDatabase, startEmbeddedPostgres } from "../../src/db/embedded.ts";

let db: EmbeddedDatabase | null = null;
let dataDir: string | null = null;
afterAll(async () => {
  await db?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** Runs `fn` with no locale in the environment (as on a minimal host), restoring it after. */
async function withoutLocale<T>(fn: () => Promise<T>): Promise<T> {
  const saved = Object.entries(process.env).filter(([k]) => k === "LANG" || k === "LANGUAGE" || k.startsWith("LC_"));
  for (const [k] of saved) delete process.env[k];
  try {
    return await fn();
  } finally {
    for (const [k, v] of saved) process.env[k] = v;
  }
}

describe("a new embedded cluster", () => {
  it("is UTF-8 with PostgreSQL's C.UTF-8 locale when the environment names no locale", async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), "tidings-cluster-"));
    db = await withoutLocale(() => startEmbeddedPostgres({ dataDir: dataDir!, postgresFlags: ["-c", "fsync=off"] }));
    const client = new pg.Client({ connectionString: db.urlFor("postgres") });
    await client.connect();
    try {
      const { rows } = await client.query(
        `SELECT pg_encoding_to_char(encoding) AS encoding, datlocprovider AS provider, datlocale AS locale
         FROM pg_database WHERE datname = current_database()`,
      );
      expect(rows[0]).toEqual({ encoding: "UTF8", provider: "b", locale: "C.UTF-8" });
      // What a SQL_ASCII cluster got wrong: escapes of non-ASCII characters, lengths in characters.
      const checks = await client.query(`SELECT ($1::jsonb ->> 'name') AS name, length($2::varchar(3)) AS chars, upper('é') AS upper`, [
        '{"name": "Jos\\u00e9"}',
        "ééé",
      ]);
      expect(checks.rows[0]).toEqual({ name: "José", chars: 3, upper: "É" });
    } finally {
      await client.end();
    }
  });
});
