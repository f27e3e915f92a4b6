// The segments the engine evaluates, read back from the database with their definitions parsed.
import type { SegmentDefinition } from "@tidings/schema";
import type pg from "pg";
import { storedSegmentDefinition } from "./compile.ts";

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

/**
 * Reads a workspace's segments. A segment whose stored definition does not parse (altered behind
 * the API's back, or stored by a release whose schema allowed it) is left out, and said once per
 * process and definition: the workspace's other segments stay current, and saving a valid
 * definition recomputes it.
 */
export class StoredSegments {
  /** Segments whose stored definition (by its instant) did not parse, already said: by `id@instant`. */
  private unreadable = new Map<string, { id: string; definitionUpdatedAt: Date }>();

  constructor(private log?: (msg: string, err?: unknown) => void) {}

  /** The workspace's segments for which `where` holds (`values` are its parameters from $2). */
  async read(db: Pick<pg.PoolClient, "query">, workspaceId: string, where = "true", values: unknown[] = []): Promise<StoredSegment[]> {
    const { rows } = await db.query<StoredRow>(
      `SELECT id, definition, definition_updated_at, last_recomputed, depends_on, member_count FROM segments
       WHERE workspace_id = $1 AND ${where}`,
      [workspaceId, ...values],
    );
    return rows.flatMap((r) => {
      try {
        return [{ ...r, definition: storedSegmentDefinition(r) }];
      } catch (err) {
        const key = `${r.id}@${r.definition_updated_at.getTime()}`;
        if (!this.unreadable.has(key)) {
          this.unreadable.set(key, { id: r.id, definitionUpdatedAt: r.definition_updated_at });
          this.log?.("segments: a segment is not evaluated until its definition is saved again", err);
        }
        return [];
      }
    });
  }

  /**
   * The segments (of any workspace) read with a definition that did not parse, with that
   * definition's instant: waiting for a recompute the engine will not make until it is saved again.
   */
  unreadableDefinitions(): { ids: string[]; instants: Date[] } {
    const all = [...this.unreadable.values()];
    return { ids: all.map((u) => u.id), instants: all.map((u) => u.definitionUpdatedAt) };
  }
}
