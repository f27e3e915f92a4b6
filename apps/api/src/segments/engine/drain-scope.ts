// The users of a drained batch of outbox rows, and each segment's scope in it (scope.ts).
import type pg from "pg";
import { param, sql } from "../../db/sql.ts";
import type { DrainedRow, DrainProgress } from "./drain-progress.ts";
import { batchScopes, type SegmentScope } from "./scope.ts";
import type { StoredSegment } from "./stored.ts";

export interface BatchScope {
  /** How many users the batch touched. */
  users: number;
  of(s: StoredSegment): SegmentScope;
}

/**
 * Each row's ids are taken as sent and with the profiles they belong to now (a linked id's old
 * memberships leave). A segment that could hold for a user with no data at all (it depends on
 * `*`: Everyone, RandomBucket, `Performed … < n`, `Not`) changes for a profile that existed
 * before only through its other keys or a `*` change; it also takes the profiles created since a
 * row of theirs (their `created_at` is the transaction's, as is their outbox row's). A row is
 * resolved by the first tier to read it, and the other reuses that (a link committed in between
 * has an outbox row of its own, which every segment evaluates).
 */
export async function resolveScope(
  db: pg.PoolClient,
  workspaceId: string,
  batch: DrainedRow[],
  progress: DrainProgress,
): Promise<BatchScope> {
  const fresh = batch.filter((r) => progress.resolution(r.id) === undefined);
  if (fresh.length > 0) await resolveRows(db, workspaceId, fresh, progress);
  const resolved = batch.map((r) => ({ keys: r.keys, ...progress.resolution(r.id)! }));
  const all = [...new Set(resolved.flatMap((r) => r.ids))];
  const scopes = batchScopes(resolved, [...new Set(resolved.flatMap((r) => r.created))], all);
  return {
    users: all.length,
    of: (s: StoredSegment) => scopes(s.definition, s.depends_on ?? []),
  };
}

/** Resolves rows no tier read yet: each id with its profile now, and which profiles were created since the row. */
async function resolveRows(db: pg.PoolClient, workspaceId: string, fresh: DrainedRow[], progress: DrainProgress): Promise<void> {
  const ids = [...new Set(fresh.flatMap((r) => r.ids))];
  const ws = param(workspaceId);
  const since = param(new Date(Math.min(...fresh.map((r) => r.created_at.getTime()))));
  const { rows } = await db.query<{ x: string; id: string | null; created_at: Date | null }>(
    sql`SELECT x, a.profile_id AS id, CASE WHEN p.created_at >= ${since} THEN p.created_at END AS created_at FROM unnest(${ids}::text[]) x
     LEFT JOIN profile_aliases a ON a.workspace_id = ${ws} AND a.alias_id = x AND a.profile_id <> x
     LEFT JOIN profiles p ON p.workspace_id = ${ws} AND p.profile_id = coalesce(a.profile_id, x)
     WHERE a.profile_id IS NOT NULL OR p.created_at >= ${since}`,
  );
  const profileOf = new Map(rows.flatMap((r) => (r.id === null ? [] : [[r.x, r.id] as const])));
  const createdAt = new Map(rows.flatMap((r) => (r.created_at === null ? [] : [[r.x, r.created_at.getTime()] as const])));
  const withProfile = (x: string) => (profileOf.has(x) ? [x, profileOf.get(x)!] : [x]);
  for (const r of fresh) {
    const committed = r.created_at.getTime();
    progress.resolved(r.id, {
      ids: r.ids.flatMap(withProfile),
      created: r.ids.filter((x) => (createdAt.get(x) ?? -Infinity) >= committed).flatMap(withProfile),
    });
  }
}
