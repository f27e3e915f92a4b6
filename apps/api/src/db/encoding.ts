// The database's character encoding, checked at start. Tidings stores text as UTF-8 and validates
// lengths in characters: in a database of another encoding (SQL_ASCII, which a PostgreSQL
// initialised without a locale gets), varchar limits count bytes (a valid messageId of 60
// non-ASCII characters failed its commit with a 500) and JSON escapes of non-ASCII characters are
// refused. The embedded PostgreSQL creates UTF-8 clusters (embedded.ts); one created before, or a
// DATABASE_URL database, may not be: the start says so, and keeps going (the data is still there).
import type pg from "pg";

/** A warning when the database is not UTF-8, naming its encoding and the way out; null when it is. */
export async function encodingWarning(db: Pick<pg.Pool, "query">): Promise<string | null> {
  const { rows } = await db.query<{ encoding: string; name: string }>(
    "SELECT pg_encoding_to_char(encoding) AS encoding, datname AS name FROM pg_database WHERE datname = current_database()",
  );
  const { encoding, name } = rows[0]!;
  if (encoding === "UTF8") return null;
  return (
    `warning: database "${name}" is ${encoding}, not UTF8: text limits count bytes, not characters (a messageId of ` +
    "60 non-ASCII characters is refused with a 500), and JSON escapes of non-ASCII characters fail. Move the data to " +
    "a database created with ENCODING 'UTF8' (pg_dump, then pg_restore into it)."
  );
}
