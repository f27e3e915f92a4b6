// A start on a database that is not UTF-8 (SQL_ASCII: a PostgreSQL initialised without a locale,
// or a cluster the embedded PostgreSQL created before it fixed its own) says so, naming the
// encoding and the way out, and keeps going; a UTF-8 database starts without a word about it.
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.ts";
import { startTidings, type Tidings } from "../../src/app/server.ts";
import { createDatabase, createTestDatabase } from "../support/app.ts";

const running: Tidings[] = [];
afterAll(async () => {
  for (const tidings of running) await tidings.close();
});

/** The lines a start on `databaseUrl` logs. */
async function startLines(databaseUrl: string): Promise<string[]> {
  const lines: string[] = [];
  const config = loadConfig({
    DATABASE_URL: databaseUrl,
    TIDINGS_ROOT_KEY: "r".repeat(30),
    TIDINGS_SECRET_KEY: "s".repeat(40),
    LOG_LEVEL: "silent",
    TIDINGS_MAX_EVENT_LOOP_DELAY_MS: "0",
  });
  running.push(await startTidings(config, (line) => lines.push(line)));
  return lines;
}

describe("the database's encoding at start", () => {
  it("is named in a warning when it is not UTF8, and the server starts", async () => {
    // A new empty database (libc's C locale: SQL_ASCII takes no other).
    const lines = await startLines(await createDatabase("TEMPLATE template0 ENCODING 'SQL_ASCII' LOCALE_PROVIDER libc LOCALE 'C'"));
    const warning = lines.find((l) => l.includes("not UTF8"));
    expect(warning).toMatch(/^warning: database "tidings_test_\d+_\d+_\d+" is SQL_ASCII, not UTF8: text limits count bytes/);
    expect(warning).toContain("ENCODING 'UTF8' (pg_dump, then pg_restore into it)");
    expect(running.at(-1)!.created).not.toBeNull(); // migrated, and the default workspace made
  });

  it("is not mentioned when it is UTF8", async () => {
    const lines = await startLines(await createTestDatabase());
    expect(lines.filter((l) => l.includes("UTF8"))).toEqual([]);
  });
});
