// What a workspace's refreshes drained of the segment outbox, per tier (DrainTier): the engine
// (index.ts) deletes a row once both tiers applied it.
import type pg from "pg";
import { type OutboxRow, stillPending } from "../../outbox/index.ts";

/** An outbox row as the engine drains it: with the instant of the transaction that wrote it. */
export type DrainedRow = OutboxRow;

/** An outbox row's ids as resolved for the segments (drain-scope.ts). */
export interface ResolvedRow {
  /** Its ids as sent, each followed by the profile it belongs to now when that is another. */
  ids: string[];
  /** Those of its ids whose profile was created since the row (in its commit, or after). */
  created: string[];
}

/**
 * The two kinds of segment a refresh drains the outbox for apart, at once, each on its own
 * connection: those reading no events (a user's profile, assignments, manual members: a few
 * milliseconds for thousands of users) and those reading events (each user's history: most of a
 * drain's cost under heavy ingestion). A change of a trait is applied within a short pass of the
 * first, not after the second's long one.
 */
export type DrainTier = "profiles" | "events";

/**
 * What the tiers of a workspace's refreshes drained: an outbox row is deleted once both did, and
 * each skips what it did. Kept from one refresh of the workspace to the next in this process (a
 * row's segments evaluated after its commit need not be again), pruned of rows no longer waiting
 * (deleted by another process's refresh, say) as each ends.
 */
export class DrainProgress {
  private done: Record<DrainTier, Set<string>> = { profiles: new Set(), events: new Set() };
  /**
   * Rows done by both and being deleted: skipped by both until the delete commits (a tier reading
   * the outbox meanwhile would apply them again).
   */
  private removing = new Set<string>();
  /** Each waiting row's ids as the first tier to read it resolved them: the other reuses them. */
  private resolutions = new Map<string, ResolvedRow>();
  /** Outbox rows done by both tiers, in all. */
  drained = 0;

  /** At a refresh's end: forgets the rows no longer in the outbox; false when nothing is left to remember. */
  async prune(db: Pick<pg.PoolClient, "query">, workspaceId: string): Promise<boolean> {
    // A row left here failed to be deleted (the refresh failed): both tiers apply it again.
    this.removing.clear();
    const marked = [...this.done.profiles, ...this.done.events];
    if (marked.length === 0) return false;
    const waiting = await stillPending(db, workspaceId, marked);
    for (const set of Object.values(this.done)) for (const id of set) if (!waiting.has(id)) set.delete(id);
    for (const id of this.resolutions.keys()) if (!this.done.profiles.has(id) && !this.done.events.has(id)) this.resolutions.delete(id);
    return waiting.size > 0;
  }

  /** The ids of the rows `tier` did and the other has not yet, and of those being deleted. */
  doneBy(tier: DrainTier): string[] {
    return [...this.done[tier], ...this.removing];
  }

  /** The row's ids as resolved by a tier, if one did. */
  resolution(id: string): ResolvedRow | undefined {
    return this.resolutions.get(id);
  }

  /** Keeps the row's resolved ids for the other tier (forgotten once both applied the row). */
  resolved(id: string, resolution: ResolvedRow) {
    this.resolutions.set(id, resolution);
  }

  /** Records `rows` as done by `tier`: the rows now done by both, to delete (then `removed`). */
  mark(tier: DrainTier, rows: DrainedRow[]): DrainedRow[] {
    const other = this.done[tier === "profiles" ? "events" : "profiles"];
    const both = rows.filter((r) => other.has(r.id));
    for (const r of rows) {
      if (!other.has(r.id)) this.done[tier].add(r.id);
      else {
        other.delete(r.id);
        this.removing.add(r.id);
        this.resolutions.delete(r.id);
      }
    }
    this.drained += both.length;
    return both;
  }

  /** Forgets rows whose delete committed. */
  removed(rows: DrainedRow[]) {
    for (const r of rows) this.removing.delete(r.id);
  }
}
