// Who depends on an ingestion commit is decided where the commit is made (src/outbox): a commit
// no segment and no running journey depends on adds nothing for the engine (no outbox row, no
// wake-up); a definition saved through another server on the same database is honoured by this
// one's very next commit. The engine is held off (its workspace lock) while the outbox is read.
import { afterAll, beforeAll, expect, it } from "vitest";
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
async function withEngineHeld(workspaceId: string, fn: () => Promise<void>): Promise<string[][]> {
  const engine = await holdEngine(a.ctx.db.pool, workspaceId);
  try {
    await engine.client.query("DELETE FROM segment_outbox WHERE workspace_id = $1", [workspaceId]);
    await fn();
    const { rows } = await engine.client.query<{ keys: string[] }>("SELECT keys FROM segment_outbox WHERE workspace_id = $1 ORDER BY id", [
      workspaceId,
    ]);
    return rows.map((r) => r.keys);
  } finally {
    await engine.release();
  }
}

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
  const saved = await request(b.url, "PUT", "/api/admin/segments", {
    headers: bearer(ws.adminKey),
    body: { name: "buyers", definition: single({ type: "Performed", event: "Bought" } as never) },
  });
  expect(saved.status, saved.text).toBe(200);
  const left = await withEngineHeld(ws.id, async () => {
    await send(a, ws.writeKey, [track({ userId: "cy" }, "Browsed", Date.now())]);
    await send(a, ws.writeKey, [track({ userId: "cy" }, "Bought", Date.now())]);
  });
  expect(left).toEqual([["e:Bought"]]);
  await a.ctx.segments.settle(ws.id);
  const members = await request(a.url, "GET", `/api/admin/segments/${saved.body.id}/users`, { headers: bearer(ws.adminKey) });
  expect(members.body.items.map((u: { userId: string }) => u.userId)).toEqual(["cy"]);
});
