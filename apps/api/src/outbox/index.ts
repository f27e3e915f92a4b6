// The change outbox (table segment_outbox, owned by table.ts): one protocol for everything that
// must react to a committed change — the segment engine and the journey runtime. A change writes
// its row in its own transaction (ingestion in its statement with `appendChanges`, everything else
// with `recordChange`), and the row's NOTIFY on OUTBOX_CHANNEL is delivered only if it commits. The
// segment engine drains the rows and, in the transaction that deletes them, hands each drained
// batch to the outbox's other consumers (`OutboxConsumers`): nothing reads the table by increasing
// id, so rows committed out of order are never skipped.
//
// Keys say what changed, typed here and nowhere else: a segment's dependencies
// (segments/engine/compile.ts) are keys of the same kinds.
import type pg from "pg";
import { prismaExecute, sql } from "../db/sql.ts";
import type { Tx } from "../db/upsert.ts";
import type { OutboxRow } from "./table.ts";
export { registerOutboxGauge } from "./metrics.ts";

export {
  appendChanges,
  appendRows,
  changesPendingIn,
  hasChanges,
  OUTBOX_CHANNEL,
  type OutboxRow,
  oldestChangeAge,
  oldestChangeOf,
  notifyIdle,
  readChanges,
  recordChange,
  removeChanges,
  stillPending,
} from "./table.ts";

/**
 * Who depends on a workspace's changes is decided where the commit is made: ingestion writes its
 * outbox row only when a segment's keys (`segments.depends_on`, set with the definition) or a
 * running journey's entry event meet the commit's keys (SQL function `tidings_outbox_needed`,
 * migration 20261125174500_outbox_dependents), under this advisory lock shared. A change to who
 * depends (a definition saved, a journey started, paused or changed) takes it exclusively in its
 * transaction: commits under way finish first (the recompute that follows sees them), and later
 * ones see the change.
 */
export const DEPENDENTS_LOCK_SPACE = 0x74646470; // "tddp"

/** Call in the transaction that changes who depends on the workspace's changes. */
export async function lockDependents(tx: Pick<Tx, "$executeRawUnsafe" | "$queryRawUnsafe">, workspaceId: string) {
  await prismaExecute(tx, sql`SELECT pg_advisory_xact_lock(${DEPENDENTS_LOCK_SPACE}::int, hashtext(${workspaceId}))`);
}

/** What a change touched. */
export const outboxKey = {
  /** Track events with this name. */
  event: (name: string) => `e:${name}`,
  /** The event name of an `event` key; null for any other key. */
  eventName: (key: string): string | null => (key.startsWith("e:") ? key.slice(2) : null),
  /** The top-level trait `key`. */
  trait: (key: string) => `t:${key}`,
  /** Subscription assignments of a group. */
  group: (groupId: string) => `sg:${groupId}`,
  /** Hand-set segment members. */
  manual: "manual",
  /** Anything (linked identities, deleted users): every segment is affected. */
  any: "*",
} as const;

/**
 * A consumer of drained rows besides the segment engine: called in the transaction that deletes
 * them, so what it records commits with the deletion or not at all. Returns how many journey
 * signals it recorded (the engine then wakes the journey runtime).
 */
export type OutboxHandOff = (db: pg.PoolClient, workspaceId: string, rows: OutboxRow[]) => Promise<number>;

/**
 * The outbox's consumers besides the segment engine, which drains it: each drained batch is handed
 * to every one in the transaction that deletes the batch. Registered once, by the composition root.
 */
export class OutboxConsumers {
  private readonly consumers: OutboxHandOff[] = [];

  add(handOff: OutboxHandOff) {
    this.consumers.push(handOff);
  }

  get empty() {
    return this.consumers.length === 0;
  }

  /** Hands `rows` to every consumer (in the caller's transaction): the journey signals they recorded. */
  async handOff(db: pg.PoolClient, workspaceId: string, rows: OutboxRow[]): Promise<number> {
    let signalled = 0;
    for (const consumer of this.consumers) signalled += await consumer(db, workspaceId, rows);
    return signalled;
  }
}
