// The segments the engine evaluates, read back from the database with their definitions parsed,
// and the failing ones set aside: a segment whose evaluation fails is marked failing with the
// reason (db/failing.ts), skipped by drains and timers, and recomputed in full once its back-off
// has passed (or at once when its definition is saved again), so it harms no other segment.
import type { SegmentDefinition } from "@tidings/schema";
import type pg from "pg";
import { isDefinitionFault, markFailing } from "../../db/failing.ts";
import { raw, type Sql, sql } from "../../db/sql.ts";
import { storedSegmentDefinition } from "./compile.ts";
import { errorText } from "../../lib/errors.ts";

/** A segments row as the engine reads it. */
interface StoredRow {
  id: string;
  definition: unknown;
  definition_updated_at: Date;
  last_recomputed: Date | null;
  depends_on: string[] | null;
  member_count: number;
}

/** A segment the engine evaluates: its row, the definition parsed. */
export type StoredSegment = Omit<StoredRow, "definition"> & { definition: SegmentDefinition };

export class StoredSegments {
  constructor(
    private pool: Pick<pg.Pool, "query">,
    private now: () => Date,
    private log?: (msg: string, err?: unknown) => void,
  ) {}

  /**
   * The workspace's segments for which `where` holds, failing ones left out. A definition that
   * does not parse (altered behind the API's back, or stored by a release whose schema allowed
   * it) is marked failing and left out too.
   */
  read(db: Pick<pg.PoolClient, "query">, workspaceId: string, where: Sql = raw("true")): Promise<StoredSegment[]> {
    return this.select(db, workspaceId, sql`evaluation_error IS NULL AND ${where}`);
  }

  /** Segments to recompute in full: a definition newer than their last recompute, failing ones whose retry is due. */
  pendingRecompute(db: Pick<pg.PoolClient, "query">, workspaceId: string): Promise<StoredSegment[]> {
    return this.select(
      db,
      workspaceId,
      sql`(last_recomputed IS NULL OR last_recomputed < definition_updated_at OR evaluation_error IS NOT NULL)
        AND (evaluation_retry_at IS NULL OR evaluation_retry_at <= ${this.now()})`,
    );
  }

  private async select(db: Pick<pg.PoolClient, "query">, workspaceId: string, where: Sql): Promise<StoredSegment[]> {
    const { rows } = await db.query<StoredRow>(
      sql`SELECT id, definition, definition_updated_at, last_recomputed, depends_on, member_count FROM segments
       WHERE workspace_id = ${workspaceId} AND ${where}`,
    );
    const parsed: StoredSegment[] = [];
    for (const r of rows) {
      try {
        parsed.push({ ...r, definition: storedSegmentDefinition(r) });
      } catch (err) {
        await this.failed(workspaceId, r, err);
      }
    }
    return parsed;
  }

  /**
   * Runs one evaluation of `segment`; when the definition is at fault (isDefinitionFault), marks
   * it failing and answers undefined instead of throwing. Inside a transaction, `savepoint` keeps
   * the transaction usable for the other segments.
   */
  async isolated<T>(
    db: Pick<pg.PoolClient, "query">,
    workspaceId: string,
    segment: Pick<StoredSegment, "id" | "definition_updated_at">,
    fn: () => Promise<T>,
    savepoint = false,
  ): Promise<T | undefined> {
    if (savepoint) await db.query("SAVEPOINT segment_evaluation");
    try {
      const value = await fn();
      if (savepoint) await db.query("RELEASE SAVEPOINT segment_evaluation");
      return value;
    } catch (err) {
      if (!isDefinitionFault(err)) throw err;
      if (savepoint) await db.query("ROLLBACK TO SAVEPOINT segment_evaluation");
      await this.failed(workspaceId, segment, err);
      return undefined;
    }
  }

  private async failed(workspaceId: string, r: Pick<StoredRow, "id" | "definition_updated_at">, err: unknown) {
    this.log?.(`segments: segment ${r.id} of workspace ${workspaceId} is failing and set aside until it is retried`, err);
    await markFailing(this.pool, "segments", { workspaceId, id: r.id }, errorText(err), this.now(), {
      column: "definition_updated_at",
      value: r.definition_updated_at,
    });
  }
}
