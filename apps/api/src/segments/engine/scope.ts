// Which users a drained outbox batch asks a segment to evaluate. Each outbox row holds the ids of
// one commit whose events changed the same keys (src/outbox), so an id's rows say what changed
// for it: an id whose rows met only track events that can only let it enter the segment
// (addedEventsCanOnly) needs evaluating only if it is not a member, one whose events can only let
// it leave only if it is; the others always.
import type { SegmentDefinition } from "@tidings/schema";
import type pg from "pg";
import { outboxKey } from "../../outbox/index.ts";
import { sql } from "../../db/sql.ts";
import { addedEventsCanOnly } from "./compile.ts";
import { scopedRows } from "./evaluate.ts";

/** A segment's ids in a drained batch, by what their changes can do to its membership. */
export interface SegmentScope {
  /** Evaluated whatever their membership. */
  all: string[];
  /** Their changes can only let them enter: evaluated only if not members. */
  enter: string[];
  /** Their changes can only let them leave: evaluated only if members. */
  exit: string[];
}

/** An outbox row of the batch: its keys, and its ids as sent and the profiles they belong to now. */
export interface ScopeRow {
  ids: string[];
  keys: string[];
}

/**
 * The scope of a segment (`def`, depending on `deps`) in a batch: the ids of the rows whose keys
 * it depends on; a row changing `*` (linked identities, deletions) is every segment's. A segment
 * that could hold for a user with no data at all (it depends on `*`) also takes `created`, the
 * profiles the batch created, whatever their rows; one without dependencies takes `everyone`.
 */
export function segmentScope(
  def: SegmentDefinition,
  deps: string[],
  rows: ScopeRow[],
  created: string[],
  everyone: string[],
): SegmentScope {
  return batchScopes(rows, created, everyone)(def, deps);
}

/**
 * segmentScope for each segment of one batch. A batch's rows carry few sets of keys, and
 * segments meeting them alike (what each set's changes can do to the segment: the same for every
 * segment on one trait, say) have the same scope: it is built once for them.
 */
export function batchScopes(rows: ScopeRow[], created: string[], everyone: string[]) {
  const keySets = new Map<string, number>();
  const sets: string[][] = [];
  const setOf = rows.map((r) => {
    const key = r.keys.join("\n");
    let k = keySets.get(key);
    if (k === undefined) {
      k = sets.push(r.keys) - 1;
      keySets.set(key, k);
    }
    return k;
  });
  const built = new Map<string, SegmentScope>();
  return (def: SegmentDefinition, deps: string[]): SegmentScope => {
    if (deps.length === 0) return { all: everyone, enter: [], exit: [] };
    const meets = (k: string) => k === outboxKey.any || deps.includes(k);
    // What each set of keys' changes can do to the segment (null: it meets none of them).
    const kinds = sets.map((keys): keyof SegmentScope | null => {
      const met = keys.filter(meets);
      if (met.length === 0) return null;
      const events = met.map(outboxKey.eventName);
      const onlyEvents = events.every((e) => e !== null);
      return (onlyEvents ? addedEventsCanOnly(def, new Set(events as string[])) : null) ?? "all";
    });
    const withCreated = deps.includes(outboxKey.any);
    const signature = `${kinds.join(",")}${withCreated ? "+created" : ""}`;
    const known = built.get(signature);
    if (known) return known;
    const byId = new Map<string, keyof SegmentScope>();
    for (const [i, r] of rows.entries()) {
      const kind = kinds[setOf[i]!];
      if (kind === null || kind === undefined) continue;
      // Rows saying different things of one id: it is evaluated.
      for (const id of r.ids) byId.set(id, byId.get(id) === undefined || byId.get(id) === kind ? kind : "all");
    }
    if (withCreated) for (const id of created) byId.set(id, "all");
    const scope: SegmentScope = { all: [], enter: [], exit: [] };
    for (const [id, kind] of byId) scope[kind].push(id);
    built.set(signature, scope);
    return scope;
  };
}

/**
 * The ids of `scope` the segment (with `memberCount` members, as last known) is evaluated for: all
 * of `all`, the non-members of `enter`, the members of `exit`.
 */
export async function narrowScope(
  db: Pick<pg.PoolClient, "query">,
  workspaceId: string,
  segment: { id: string; memberCount: number },
  scope: SegmentScope,
): Promise<string[]> {
  if (scope.enter.length === 0 && scope.exit.length === 0) return scope.all;
  const members = (ids: string[]) =>
    scopedRows("segment_memberships", "profile_id", workspaceId, segment.id, ids, { ids: ids.length, rows: segment.memberCount });
  const { rows } = await db.query<{ ids: string[] }>(
    sql`SELECT ARRAY(SELECT unnest(${scope.all}::text[])
       UNION (SELECT unnest(${scope.enter}::text[]) EXCEPT ${members(scope.enter)})
       UNION ${members(scope.exit)}) AS ids`,
  );
  return rows[0]!.ids;
}
