// Who depends on an ingestion commit is decided where the commit is made (src/outbox): a commit
// no segment and no running journey depends on adds nothing for the engine (no outbox row, no
// wake-up); a definition saved through another server on the same database is honoured by this
// one's very next commit. The engine is held off (its workspace lock) while the outbox is read.
import { afterAll, beforeAll, expect, it } from "vitest";
import { OUTBOX_CHANNEL } from "../../src/outbox/index.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { basic, bearer, request } from "../support/http.ts";
import { holdEngine, identify, single, track } from "./support.ts";

let a: TestApp;
let b: TestApp;
beforeAll(async () => {
  a = await createTestApp();
  b = await createTestApp({ databaseUrl: a.databaseUrl });
});
afterAll(async () => {
  await b?.close();
  await a?.close();
});

/** Runs `fn` while the engine cannot drain the workspace's outbox; returns the rows left in it. */
async function withEngineHeld(workspaceId: string, fn: () => Promise<void>): Promise<{ keys: string[]; ids: string[] }[]> {
  const engine = await holdEngine(a.ctx.db.pool, workspaceId);
  try {
    await engine.client.query("DELETE FROM segment_outbox WHERE workspace_id = $1", [workspaceId]);
    await fn();
    const { rows } = await engine.client.query<{ keys: string[]; ids: string[] }>(
      "SELECT keys, ids FROM segment_outbox WHERE workspace_id = $1 ORDER BY id",
      [workspaceId],
    );
    return rows;
  } finally {
    await engine.release();
  }
}

/** Saves a segment through `t`; returns its id. */
async function saveSegment(t: TestApp, adminKey: string, name: string, definition: unknown): Promise<string> {
  const saved = await request(t.url, "PUT", "/api/admin/segments", { headers: bearer(adminKey), body: { name, definition } });
  expect(saved.status, saved.text).toBe(200);
  return saved.body.id;
}

const buyers = single({ type: "Performed", event: "Bought" } as never);

const send = async (t: TestApp, writeKey: string, events: unknown[]) => {
  const res = await request(t.url, "POST", "/api/public/apps/batch", { headers: basic(writeKey), body: { batch: events } });
  expect(res.status, res.text).toBe(204);
};

it("a commit nothing depends on adds nothing for the engine", async () => {
  const ws = a.workspace;
  const left = await withEngineHeld(ws.id, async () => {
    await send(a, ws.writeKey, [identify("ann", { plan: "pro" }, Date.now()), track({ userId: "ann" }, "Bought", Date.now())]);
    await send(a, ws.writeKey, [identify("bob", { plan: "free" }, Date.now())]);
  });
  expect(left).toEqual([]);
});

it("a segment saved through another server is honoured by this server's next commit", async () => {
  const ws = await a.newWorkspace();
  const id = await saveSegment(b, ws.adminKey, "buyers", buyers);
  const left = await withEngineHeld(ws.id, async () => {
    await send(a, ws.writeKey, [track({ userId: "cy" }, "Browsed", Date.now())]);
    await send(a, ws.writeKey, [track({ userId: "cy" }, "Bought", Date.now())]);
  });
  expect(left.map((r) => r.keys)).toEqual([["e:Bought"]]);
  await a.ctx.segments.settle(ws.id);
  const members = await request(a.url, "GET", `/api/admin/segments/${id}/users`, { headers: bearer(ws.adminKey) });
  expect(members.body.items.map((u: { userId: string }) => u.userId)).toEqual(["cy"]);
});

it("a commit's changes are recorded apart by what they change, so a segment is asked only about the users it depends on", async () => {
  const ws = await a.newWorkspace();
  await saveSegment(a, ws.adminKey, "buyers", buyers);
  await saveSegment(a, ws.adminKey, "pro", single({ type: "Trait", path: "plan", operator: { type: "Equals", value: "pro" } } as never));
  const left = await withEngineHeld(ws.id, async () => {
    await send(a, ws.writeKey, [
      identify("ann", { plan: "pro" }, Date.now()),
      track({ userId: "bob" }, "Bought", Date.now()),
      track({ userId: "cy" }, "Bought", Date.now()),
      track({ userId: "dee" }, "Browsed", Date.now()),
    ]);
  });
  // One row per set of keys something depends on: nothing depends on Browsed.
  expect(left.map((r) => ({ keys: r.keys, ids: [...r.ids].sort() })).sort((x, y) => x.keys[0]!.localeCompare(y.keys[0]!))).toEqual([
    { keys: ["e:Bought"], ids: ["bob", "cy"] },
    { keys: ["t:plan"], ids: ["ann"] },
  ]);
  await a.ctx.segments.settle(ws.id);
});

it("ingestion wakes the engine once while its outbox holds rows, not at every commit", async () => {
  const ws = await a.newWorkspace();
  await saveSegment(a, ws.adminKey, "buyers", buyers);
  await a.ctx.segments.settle(ws.id);
  const listener = await a.ctx.db.pool.connect();
  const woken: string[] = [];
  listener.on("notification", (n) => {
    if (n.payload === ws.id) woken.push(n.payload);
  });
  try {
    await listener.query(`LISTEN ${OUTBOX_CHANNEL}`);
    const left = await withEngineHeld(ws.id, async () => {
      for (const user of ["ann", "bob", "cy"]) await send(a, ws.writeKey, [track({ userId: user }, "Bought", Date.now())]);
      // Notifications are delivered after their commit; give the last one time to arrive.
      await new Promise((r) => setTimeout(r, 200));
    });
    expect(left).toHaveLength(3);
    // The first commit found the outbox empty; the two after it found its row waiting.
    expect(woken).toHaveLength(1);
  } finally {
    await listener.query(`UNLISTEN ${OUTBOX_CHANNEL}`);
    listener.release();
  }
  await a.ctx.segments.settle(ws.id);
});

it("a segment that could hold for a user with no data is evaluated for the profiles a batch creates and for its own keys, not for every user touched", async () => {
  const ws = await a.newWorkspace();
  const everyone = await saveSegment(a, ws.adminKey, "everyone", single({ type: "Everyone" } as never));
  const neverBought = await saveSegment(
    a,
    ws.adminKey,
    "never-bought",
    single({ type: "Performed", event: "Bought", times: 1, timesOperator: "<" } as never),
  );
  const members = async (id: string) =>
    (await request(a.url, "GET", `/api/admin/segments/${id}/users`, { headers: bearer(ws.adminKey) })).body.items
      .map((u: { userId: string }) => u.userId)
      .sort();
  await send(a, ws.writeKey, [identify("ann", { plan: "pro" }, Date.now())]);
  await a.ctx.segments.settle(ws.id);
  expect(await members(everyone)).toEqual(["ann"]);
  // A mark no evaluation of ann would leave: her membership row taken away behind the engine's back.
  await a.ctx.db.pool.query("DELETE FROM segment_memberships WHERE segment_id = $1 AND profile_id = 'ann'", [everyone]);

  // ann exists already and Browsed is nobody's key: only bob, whom this commit creates, is evaluated.
  await send(a, ws.writeKey, [track({ userId: "ann" }, "Browsed", Date.now()), track({ userId: "bob" }, "Browsed", Date.now())]);
  await a.ctx.segments.settle(ws.id);
  expect(await members(everyone)).toEqual(["bob"]);
  expect(await members(neverBought)).toEqual(["ann", "bob"]);

  // The segment's own key reaches ann: she leaves never-bought.
  await send(a, ws.writeKey, [track({ userId: "ann" }, "Bought", Date.now())]);
  await a.ctx.segments.settle(ws.id);
  expect(await members(neverBought)).toEqual(["bob"]);

  // A linked identity (`*`) is every segment's: ann is evaluated again and is back in everyone.
  await send(a, ws.writeKey, [{ type: "alias", userId: "ann", previousId: "ann-anon", messageId: "link-ann" }]);
  await a.ctx.segments.settle(ws.id);
  expect(await members(everyone)).toEqual(["ann", "bob"]);
});

it("a user whose new track events can only keep its membership as it is is not evaluated; one with other changes in the batch is", async () => {
  const ws = await a.newWorkspace();
  // Windowed, so that an evaluation reads the users' timers (a segment without windows keeps none,
  // and one that changes nothing for a user leaves no trace of having evaluated it).
  const within = 10 * 365 * 86_400;
  const buyersId = await saveSegment(
    a,
    ws.adminKey,
    "buyers",
    single({ type: "Performed", event: "Bought", withinSeconds: within } as never),
  );
  const neverBought = await saveSegment(
    a,
    ws.adminKey,
    "never-bought",
    single({ type: "Performed", event: "Bought", times: 1, timesOperator: "<", withinSeconds: within } as never),
  );
  const proBuyers = await saveSegment(a, ws.adminKey, "pro-buyers", {
    entryNode: { type: "And", id: "and", children: ["pro", "bought"] },
    nodes: [
      { type: "Trait", id: "pro", path: "plan", operator: { type: "Equals", value: "pro" } },
      { type: "Performed", id: "bought", event: "Bought", times: 1, timesOperator: ">=", withinSeconds: within },
    ],
  });
  const members = async (id: string) =>
    (await request(a.url, "GET", `/api/admin/segments/${id}/users`, { headers: bearer(ws.adminKey) })).body.items
      .map((u: { userId: string }) => u.userId)
      .sort();
  // A mark any evaluation of the user would replace: a timer at an instant its definition never sets.
  const mark = (segmentId: string, userId: string) =>
    a.ctx.db.pool.query(
      `INSERT INTO segment_timers (workspace_id, segment_id, profile_id, due_at) VALUES ($1, $2, $3, '2100-01-01')
       ON CONFLICT (workspace_id, segment_id, profile_id) DO UPDATE SET due_at = EXCLUDED.due_at`,
      [ws.id, segmentId, userId],
    );
  const marked = async (segmentId: string, userId: string) =>
    (
      await a.ctx.db.pool.query("SELECT 1 FROM segment_timers WHERE segment_id = $1 AND profile_id = $2 AND due_at = '2100-01-01'", [
        segmentId,
        userId,
      ])
    ).rowCount === 1;

  await send(a, ws.writeKey, [identify("ann", { plan: "pro" }, Date.now()), track({ userId: "ann" }, "Bought", Date.now())]);
  await a.ctx.segments.settle(ws.id);
  expect(await members(buyersId)).toEqual(["ann"]);
  expect(await members(proBuyers)).toEqual(["ann"]);
  expect(await members(neverBought)).toEqual([]);

  // Another Bought can only keep ann in buyers and pro-buyers, and out of never-bought.
  await Promise.all([mark(buyersId, "ann"), mark(proBuyers, "ann"), mark(neverBought, "ann")]);
  await send(a, ws.writeKey, [track({ userId: "ann" }, "Bought", Date.now()), track({ userId: "bob" }, "Bought", Date.now())]);
  await a.ctx.segments.settle(ws.id);
  expect([await marked(buyersId, "ann"), await marked(proBuyers, "ann"), await marked(neverBought, "ann")]).toEqual([true, true, true]);
  // bob was not a member: evaluated, he enters.
  expect(await members(buyersId)).toEqual(["ann", "bob"]);

  // In one batch ann changes plan too: her identify is pro-buyers' other key, so she is evaluated and leaves.
  await send(a, ws.writeKey, [identify("ann", { plan: "free" }, Date.now()), track({ userId: "ann" }, "Bought", Date.now())]);
  await a.ctx.segments.settle(ws.id);
  expect(await members(proBuyers)).toEqual([]);
  expect(await marked(proBuyers, "ann")).toBe(false);
  expect(await marked(buyersId, "ann")).toBe(true);
});
