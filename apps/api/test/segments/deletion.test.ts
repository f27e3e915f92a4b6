// A segment's rows of the segment engine (memberships, their changes, timers) have no foreign key
// to it (prisma/schema.prisma): a trigger deletes them with it, and an evaluation writes them
// only while the segment exists (src/segments/engine/evaluate.ts), even when the two race. Two
// evaluations of one segment that overlap (its workspace's lock lost) record nothing twice.
import { SegmentDefinition } from "@tidings/schema";
import type pg from "pg";
import { expect, it } from "vitest";
import { createWorkspace } from "../../src/auth/service.ts";
import { evaluateSegment } from "../../src/segments/engine/evaluate.ts";
import { testDatabase } from "./support.ts";

const t = testDatabase();

// Members with a timer each (their lastSeen leaves the window in a minute).
const seenLastMinute = SegmentDefinition.parse({
  entryNode: { type: "Trait", id: "root", path: "lastSeen", operator: { type: "Within", windowSeconds: 60 } },
  nodes: [],
});
const USERS = ["ann", "bob"];

async function world(name: string) {
  const ws = (await createWorkspace(t.db.prisma, name)).workspace.id;
  await t.admin.query("INSERT INTO profiles (workspace_id, profile_id, traits) SELECT $1, p, $3 FROM unnest($2::text[]) p", [
    ws,
    USERS,
    { lastSeen: new Date().toISOString() },
  ]);
  const segment = async (segmentName: string) => {
    const { rows } = await t.admin.query<{ id: string }>(
      "INSERT INTO segments (workspace_id, id, name, definition) VALUES ($1, gen_random_uuid(), $2, $3) RETURNING id",
      [ws, segmentName, seenLastMinute],
    );
    return rows[0]!.id;
  };
  const evaluate = (id: string, db: Pick<pg.ClientBase, "query"> = t.db.pool) =>
    evaluateSegment(db, { workspaceId: ws, id, definition: seenLastMinute }, new Map(), new Date(), USERS);
  // The segment's rows in each table.
  const rowsOf = async (id: string) => {
    const count = async (table: string) =>
      (await t.admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE workspace_id = $1 AND segment_id = $2`, [ws, id]))
        .rows[0]!.n;
    return {
      memberships: await count("segment_memberships"),
      changes: await count("segment_membership_changes"),
      timers: await count("segment_timers"),
    };
  };
  return { ws, segment, evaluate, rowsOf };
}

const none = { memberships: 0, changes: 0, timers: 0 };
const both = { memberships: 2, changes: 2, timers: 2 };

it("deleting a segment deletes its memberships, changes and timers, and no other segment's", async () => {
  const w = await world("deletion");
  const doomed = await w.segment("doomed");
  const kept = await w.segment("kept");
  await w.evaluate(doomed);
  await w.evaluate(kept);
  expect(await w.rowsOf(doomed)).toEqual(both);
  await t.admin.query("DELETE FROM segments WHERE workspace_id = $1 AND id = $2", [w.ws, doomed]);
  expect(await w.rowsOf(doomed)).toEqual(none);
  expect(await w.rowsOf(kept)).toEqual(both);
});

it("an evaluation racing its segment's deletion writes nothing once the deletion commits", async () => {
  const w = await world("deletion-race");
  const doomed = await w.segment("doomed");
  // The deletion holds the segment's row until it commits.
  const deleting = (await t.admin.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
  await t.admin.query("BEGIN");
  await t.admin.query("DELETE FROM segments WHERE workspace_id = $1 AND id = $2", [w.ws, doomed]);
  let settled = false;
  const evaluated = w.evaluate(doomed).finally(() => {
    settled = true;
  });
  // Once the evaluation waits for the deletion (or, were it not to wait, has ended), the deletion commits.
  await untilBlockedBy(deleting, () => settled);
  await t.admin.query("COMMIT");
  expect(await evaluated).toEqual({ entered: 0, exited: 0, signals: 0 });
  expect(await w.rowsOf(doomed)).toEqual(none);
});

it("of two evaluations of one segment at once, the later fails on the primary key: each enter is recorded once", async () => {
  const w = await world("overlap");
  const id = await w.segment("overlapping");
  // The first evaluation's enters, not yet committed.
  const first = (await t.admin.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
  await t.admin.query("BEGIN");
  expect(await w.evaluate(id, t.admin)).toEqual({ entered: 2, exited: 0, signals: 0 });
  let settled = false;
  // Its failure is taken as it happens (it may come before COMMIT's own answer is read).
  const second = w.evaluate(id).then(
    () => null,
    (err: unknown) => err,
  );
  void second.finally(() => {
    settled = true;
  });
  await untilBlockedBy(first, () => settled);
  await t.admin.query("COMMIT");
  expect(await second).toMatchObject({ code: "23505" }); // unique_violation: its refresh is retried
  expect(await w.rowsOf(id)).toEqual(both);
  // Retried, it finds nothing to change.
  expect(await w.evaluate(id)).toEqual({ entered: 0, exited: 0, signals: 0 });
  expect(await w.rowsOf(id)).toEqual(both);
});

/** Polls until a session waits for the backend `pid` (or `settled()`: it ended without waiting). */
async function untilBlockedBy(pid: number, settled: () => boolean) {
  while (!settled()) {
    const { rows } = await t.db.pool.query<{ waiting: boolean }>(
      "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid))) AS waiting",
      [pid],
    );
    if (rows[0]!.waiting) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}
