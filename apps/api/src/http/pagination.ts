// Keyset pagination shared by every list route: opaque cursors over the sort key of the last row.
import { badRequest } from "../lib/errors.ts";

export function encodeCursor(key: (string | number)[]): string {
  return Buffer.from(JSON.stringify(key)).toString("base64url");
}

/** Decodes a cursor made by encodeCursor with `arity` parts of the given kinds; 400 otherwise. */
export function decodeCursor<T extends ("string" | "number")[]>(
  cursor: string,
  kinds: [...T],
): { [K in keyof T]: T[K] extends "number" ? number : string } {
  try {
    const parts = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as unknown;
    if (Array.isArray(parts) && parts.length === kinds.length && parts.every((p, i) => typeof p === kinds[i])) {
      return parts as { [K in keyof T]: T[K] extends "number" ? number : string };
    }
  } catch {
    // fall through to the error
  }
  throw invalidCursor();
}

export const invalidCursor = () => badRequest("Invalid cursor", [{ path: "cursor", message: "not a cursor returned by this endpoint" }]);

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Keyset condition for lists ordered by (name, id): rows after the position the cursor names. */
export function afterNameAndId(cursor: string) {
  const [name, id] = decodeCursor(cursor, ["string", "string"]);
  // Ids are UUID columns: anything else would fail in the database rather than as a 400.
  if (!UUID_RE.test(id)) throw invalidCursor();
  return { OR: [{ name: { gt: name } }, { name, id: { gt: id } }] };
}

/**
 * Cuts a page from rows fetched with `take: limit + 1`; the cursor names the last row returned.
 */
export function page<R, T>(rows: R[], limit: number, toItem: (row: R) => T, keyOf: (row: R) => (string | number)[]) {
  const slice = rows.slice(0, limit);
  const last = slice[slice.length - 1];
  return {
    items: slice.map(toItem),
    nextCursor: rows.length > limit && last !== undefined ? encodeCursor(keyOf(last)) : null,
  };
}
