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
  if (deps.length === 0) return { all: everyone, enter: [], exit: [] };
  const meets = (k: string) => k === outboxKey.any || deps.includes(k);
  // What a row's changes can do to the segment, per set of keys met.
  const kinds = new Map<string, keyof SegmentScope>();
  const kindOf = (keys: string[]): keyof SegmentScope => {
    const met = keys.filter(meets);
    const cacheKey = met.join("\n");
    let kind = kinds.get(cacheKey);
    if (kind === undefined) {
      const events = met.map(outboxKey.eventName);
      const onlyEvents = events.every((e) => e !== null);
      kind = (onlyEvents ? addedEventsCanOnly(def, new Set(events as string[])) : null) ?? "all";
      kinds.set(cacheKey, kind);
    }
    return kind;
  };
  const byId = new Map<string, keyof SegmentScope>();
  for (const r of rows) {
    if (!r.keys.some(meets)) continue;
    const kind = kindOf(r.keys);
    // Rows saying different things of one id: it is evaluated.
    for (const id of r.ids) byId.set(id, byId.get(id) === undefined || byId.get(id) === kind ? kind : "all");
  }
  if (deps.includes(outboxKey.any)) for (const id of created) byId.set(id, "all");
  const scope: SegmentScope = { all: [], enter: [], exit: [] };
  for (const [id, kind] of byId) scope[kind].push(id);
  return scope;
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
