// A LastPerformed, and a count compared with `times` whose properties hold no dates, are decided
// by each user's newest matching events (compile-nodes.ts, newestNeeded): an incremental
// evaluation reads those, newest first, whatever the length of the user's history, and agrees
// with a full recompute, windows included.
import { SegmentDefinition } from "@tidings/schema";
import { describe, expect, it } from "vitest";
import { createWorkspace } from "../../src/auth/service.ts";
import { compileSegment, segmentInputs } from "../../src/segments/engine/compile.ts";
import { newestNeeded } from "../../src/segments/engine/compile-nodes.ts";
import { testDatabase } from "./support.ts";

const t = testDatabase();

/** A one-node definition, parsed with the schema (its defaults filled in, as the engine reads it). */
const single = (node: Record<string, unknown>) => SegmentDefinition.parse({ entryNode: { ...node, id: "root" }, nodes: [] });

const NOW = new Date("2026-06-01T12:00:00Z");
const HISTORY = 300;
const price20 = [{ path: "price", operator: { type: "GreaterThanOrEqual", value: 20 } }];
const eur = [{ path: "currency", operator: { type: "Equals", value: "EUR" } }];

/** Each read by its newest events: how many per user. */
const bounded: Record<string, [SegmentDefinition, number]> = {
  "the last event's properties": [single({ type: "LastPerformed", event: "Viewed", whereProperties: eur, hasProperties: price20 }), 1],
  "at least twice within a day": [single({ type: "Performed", event: "Viewed", times: 2, withinSeconds: 86_400 }), 2],
  "exactly three times, with properties": [
    single({ type: "Performed", event: "Viewed", times: 3, timesOperator: "=", properties: price20 }),
    4,
  ],
  "fewer than twice within an hour": [single({ type: "Performed", event: "Viewed", times: 2, timesOperator: "<", withinSeconds: 3600 }), 2],
};
/** A dated property condition: an older event can match later, so every event may matter. */
const unbounded = single({
  type: "Performed",
  event: "Viewed",
  times: 1,
  properties: [{ path: "at", operator: { type: "Within", windowSeconds: 3600 } }],
});

describe("newest matching events", () => {
  it("are how many each kind of node needs", () => {
    for (const [name, [definition, newest]] of Object.entries(bounded))
      expect({ name, newest: newestNeeded(definition.entryNode) }).toEqual({ name, newest });
    expect(newestNeeded(unbounded.entryNode)).toBeNull();
  });

  it("are all an incremental evaluation reads of a long history, and it agrees with a full recompute", async () => {
    const ws = (await createWorkspace(t.db.prisma, "newest")).workspace.id;
    const users = ["ann", "bob", "cy", "dee"];
    await t.admin.query("INSERT INTO profiles (workspace_id, profile_id) SELECT $1, p FROM unnest($2::text[]) p", [ws, users]);
    // Ann: a long history, one Viewed a minute, newest last: prices 0–29, currencies alternating,
    // interleaved with other events. Bob: two recent views. Cy: one old view. Dee: none.
    await t.admin.query(
      `INSERT INTO events (workspace_id, message_id, type, identity_id, user_id, event, event_time, received_at, payload)
       SELECT $1::uuid, 'ann-' || i, 'track', 'ann', 'ann', CASE WHEN i % 3 = 0 THEN 'Bought' ELSE 'Viewed' END,
         $2::timestamptz - (${HISTORY} - i) * interval '1 minute', $2::timestamptz,
         jsonb_build_object('properties', jsonb_build_object('price', i % 30, 'currency', CASE WHEN i % 2 = 0 THEN 'EUR' ELSE 'USD' END))
       FROM generate_series(1, ${HISTORY}) i
       UNION ALL SELECT $1::uuid, 'bob-' || i, 'track', 'bob', 'bob', 'Viewed', $2::timestamptz - i * interval '10 minutes', $2::timestamptz,
         '{"properties": {"price": 25, "currency": "EUR"}}'
       FROM generate_series(1, 2) i
       UNION ALL SELECT $1::uuid, 'cy-1', 'track', 'cy', 'cy', 'Viewed', $2::timestamptz - interval '2 days', $2::timestamptz,
         '{"properties": {"price": 5, "currency": "EUR"}}'`,
      [ws, NOW],
    );
    // Other users' events, so that the table is not one a scan reads as cheaply as a lookup.
    await t.admin.query(
      `INSERT INTO events (workspace_id, message_id, type, identity_id, user_id, event, event_time, received_at, payload)
       SELECT $1::uuid, 'other-' || i, 'track', 'other-' || (i % 2000), 'other-' || (i % 2000), 'Viewed',
         $2::timestamptz - i * interval '1 second', $2::timestamptz, '{"properties": {"price": 1}}'
       FROM generate_series(1, 40000) i`,
      [ws, NOW],
    );
    await t.admin.query("ANALYZE events");

    const evaluate = async (definition: SegmentDefinition, scope: string[] | null, now = NOW) => {
      const client = await t.db.pool.connect();
      try {
        await client.query("BEGIN");
        const fetched = async () =>
          (
            await client.query<{ n: number }>(
              "SELECT (coalesce(idx_tup_fetch, 0) + coalesce(seq_tup_read, 0))::int AS n FROM pg_stat_xact_user_tables WHERE relname = 'events'",
            )
          ).rows[0]?.n ?? 0;
        const before = await fetched();
        const { query } = compileSegment(definition, new Map(), segmentInputs(ws, "s", now, scope));
        const { rows } = await client.query<{ profile_id: string; member: boolean; next_at: Date | null }>(query);
        const read = (await fetched()) - before;
        await client.query("ROLLBACK");
        const results = rows
          .map((r) => ({ user: r.profile_id, member: r.member, next: r.next_at?.toISOString() ?? null }))
          .sort((a, b) => a.user.localeCompare(b.user));
        return { results, read };
      } finally {
        client.release();
      }
    };
    // The dated condition reads every one of Ann's Viewed events.
    expect((await evaluate(unbounded, users)).read).toBeGreaterThanOrEqual(HISTORY);
    // A full recompute reads every event: the incremental evaluation must find the same members,
    // and nothing may change before the next instant it gives (its users are evaluated again then).
    for (const [name, [definition, newest]] of Object.entries(bounded)) {
      const full = await evaluate(definition, null);
      const incremental = await evaluate(definition, users);
      const members = (x: typeof full) => x.results.map((r) => [r.user, r.member]);
      expect({ name, members: members(incremental) }).toEqual({ name, members: members(full) });
      for (const r of incremental.results) {
        if (r.next === null) continue;
        const justBefore = await evaluate(definition, null, new Date(Date.parse(r.next) - 1));
        expect({ name, user: r.user, member: justBefore.results.find((x) => x.user === r.user)?.member }).toEqual({
          name,
          user: r.user,
          member: r.member,
        });
      }
      // Ann's newest matching events lie among her newest few (at most a few per match, and one
      // more of the same instant to close the last): far from her 300.
      expect({ name, read: incremental.read <= 4 * newest + 8 }).toEqual({ name, read: true });
    }
  });
});
