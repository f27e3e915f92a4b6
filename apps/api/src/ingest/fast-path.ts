// The common case in one statement: when a commit has no identity links and no group events,
// inserting the events and creating/updating their profiles is a single data-modifying CTE
// (sql.ts, fastPathStatement). A lone statement is its own transaction, so the commit
// costs one round trip instead of five.
//
// Profiles are folded here, before PostgreSQL has seen the events, so the statement holds only
// when its assumptions do, and otherwise fails as a whole, having stored nothing: a replayed
// messageId fails the plain INSERT (unique violation, 23505; its traits must not apply twice),
// and an id that is an alias of another profile fails the final check (TD001). The Ingestor then
// stores the commit on the transactional path, which handles both.
import type pg from "pg";
import {
  EVENT_COLUMNS,
  encodeRows,
  OUTBOX_COLUMNS,
  outboxRows,
  PROFILE_COLUMNS,
  profileRows,
  uniqueSorted,
  type WorkspaceEvent,
} from "./rows.ts";
import { fastPathStatement } from "./sql.ts";

/** Whether the events can take the fast path: no identity links, no groups. */
export function fitsOneStatement(rows: WorkspaceEvent[]): boolean {
  for (const { ev } of rows) {
    if (ev.type === "alias" || ev.type === "group" || (ev.type === "identify" && ev.userId !== null && ev.anonymousId !== null))
      return false;
  }
  return true;
}

/**
 * Stores events that `fitsOneStatement`; returns how many were new, or null, having stored
 * nothing, when the commit needs the transactional path.
 */
export async function storeInOneStatement(pool: pg.Pool, rows: WorkspaceEvent[]): Promise<number | null> {
  const events = uniqueSorted(rows);
  const profiles = profileRows(events, (_ws, id) => id);
  try {
    const statement = fastPathStatement(
      encodeRows(EVENT_COLUMNS, events),
      encodeRows(PROFILE_COLUMNS, profiles),
      encodeRows(OUTBOX_COLUMNS, outboxRows(events)),
    );
    // Named, so each connection parses and plans this large statement once.
    await pool.query({ name: "tidings-ingest-v8", text: statement.text, values: statement.values });
    return events.length;
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === "TD001" || code === "23505") return null;
    throw err;
  }
}
