// Entering a journey writes each run once, where it waits or ends, with its messages queued in the
// entering commit (journeys/runtime/entries.ts): the segment's members when it starts, users who
// enter the segment later, track events of an EventEntryNode. A trigger in this file's database
// records every update of a run. A journey whose nodes fail at entry gets its runs at its first
// node, set aside by the runtime, while the workspace's other journeys go on.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../broadcasts/support.ts";
import { SECOND, TestClock, track } from "../segments/support.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { ENTRY_LOCK_SPACE } from "../../src/journeys/runtime/entries.ts";
import { definition, delaySeconds, type JourneyWorld, journeyWorld, message } from "./runtime-support.ts";

let t: TestApp;
let receiver: Receiver;
const clock = new TestClock();

beforeAll(async () => {
  receiver = await startReceiver((_, res) => res.writeHead(200).end());
  t = await createTestApp({ outboundAllowedHosts: ["127.0.0.1"], clock: clock.read });
  await t.ctx.db.pool.query(`
    CREATE TABLE test_run_updates (id uuid, node_id text);
    CREATE FUNCTION test_run_updated() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO test_run_updates VALUES (OLD.id, OLD.node_id); RETURN NULL; END $$;
    CREATE TRIGGER test_run_updated AFTER UPDATE ON journey_runs FOR EACH ROW EXECUTE FUNCTION test_run_updated();`);
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

/** The runs of a journey updated since they were inserted, by the node they were at. */
async function updatedRuns(journeyId: string): Promise<Record<string, number>> {
  const { rows } = await t.ctx.db.pool.query<{ node_id: string; n: number }>(
    `SELECT u.node_id, count(*)::int AS n FROM test_run_updates u JOIN journey_runs r ON r.id = u.id
     WHERE r.journey_id = $1 GROUP BY u.node_id`,
    [journeyId],
  );
  return Object.fromEntries(rows.map((r) => [r.node_id, r.n]));
}

const sentTo = async (w: JourneyWorld, journeyId: string, n: number) =>
  waitFor(
    () => w.deliveries(journeyId),
    (ds) => ds.length === n && ds.every((d) => d.status === "Sent"),
  );

describe("entering a journey", () => {
  it("members at the start and users entering later: at the delay after the message, never updated until the delay ends", async () => {
    const w = await journeyWorld(t, clock, receiver);
    const seg = await w.manualSegment();
    const members = Array.from({ length: 30 }, (_, i) => `m${i}`);
    await w.add(seg, members);
    await w.settle();
    const tpl = await w.template("w1");
    const j = await w.journey({
      status: "Running",
      definition: definition({ segment: seg }, [message("hello", tpl, "wait"), delaySeconds("wait", 60, "ExitNode")]),
    });
    await waitFor(
      () => w.runs(j.id),
      (rs) => rs.length === 30 && rs.every((r) => r.nodeId === "wait" && r.waitingUntil !== null),
    );
    await w.add(seg, ["late"]);
    await w.settle();
    const runs = await w.runs(j.id);
    expect(runs.find((r) => r.userId === "late")).toMatchObject({ nodeId: "wait", status: "Active" });
    await sentTo(w, j.id, 31);
    expect(await updatedRuns(j.id)).toEqual({});
    expect((await w.stats(j.id)).nodes.find((n: { id: string }) => n.id === "hello")).toMatchObject({ reached: 31, sent: 31 });

    clock.advance(61 * SECOND);
    await w.settle();
    const ended = await w.runs(j.id);
    expect(ended.every((r) => r.status === "Completed")).toBe(true);
    expect(await updatedRuns(j.id)).toEqual({ wait: 31 });
  });

  it("a track event: the run written once, with the event as stored", async () => {
    const w = await journeyWorld(t, clock, receiver);
    const tpl = await w.template("w2");
    const j = await w.journey({
      status: "Running",
      definition: definition({ event: "Order Placed" }, [message("thanks", tpl, "wait"), delaySeconds("wait", 60, "ExitNode")]),
    });
    await w.send([track({ userId: "dan" }, "Order Placed", clock.now, { sku: "sku-9", n: 1.25, tags: ["a", null] })]);
    await sentTo(w, j.id, 1);
    const { rows } = await t.ctx.db.pool.query(
      `SELECT r.node_id, r.event ->> 'event' AS name, r.event -> 'properties' = e.payload -> 'properties' AS same
       FROM journey_runs r JOIN events e ON e.workspace_id = r.workspace_id AND e.message_id = r.event ->> 'messageId'
       WHERE r.journey_id = $1`,
      [j.id],
    );
    expect(rows).toEqual([{ node_id: "wait", name: "Order Placed", same: true }]);
    expect(await updatedRuns(j.id)).toEqual({});
  });

  it("a journey whose nodes fail at entry gets its runs at its first node and is set aside; the workspace's other journeys enter", async () => {
    const w = await journeyWorld(t, clock, receiver);
    const seg = await w.manualSegment();
    await w.settle();
    const tpl = await w.template("w3");
    const nodes = [message("hello", tpl, "wait"), delaySeconds("wait", 60, "ExitNode")];
    const broken = await w.journey({ status: "Running", definition: definition({ segment: seg }, nodes) });
    const fine = await w.journey({ status: "Running", definition: definition({ segment: seg }, nodes) });
    // The stored version no longer parses: the runtime's definition of it is the journey's fault.
    await t.ctx.db.pool.query(`UPDATE journey_versions SET definition = '{"nodes": 1}' WHERE journey_id = $1`, [broken.id]);
    await w.add(seg, ["ann", "bob"]);
    await w.settle();
    await sentTo(w, fine.id, 2);
    expect((await w.runs(fine.id)).map((r) => [r.userId, r.nodeId]).sort()).toEqual([
      ["ann", "wait"],
      ["bob", "wait"],
    ]);
    expect((await w.runs(broken.id)).map((r) => [r.userId, r.nodeId, r.status]).sort()).toEqual([
      ["ann", "hello", "Active"],
      ["bob", "hello", "Active"],
    ]);
    const failing = await waitFor(
      () => w.admin("GET", `/api/admin/journeys/${broken.id}`),
      (b) => b.failing !== undefined,
    );
    expect(failing.failing.reason).toMatch(/not a valid definition/);
  });

  it("an entry under way (the workspace's entry lock held) holds up no due run of another journey", async () => {
    const w = await journeyWorld(t, clock, receiver);
    const seg = await w.manualSegment();
    await w.add(seg, ["cy"]);
    await w.settle();
    const j = await w.journey({ status: "Running", definition: definition({ segment: seg }, [delaySeconds("wait", 60, "ExitNode")]) });
    await waitFor(
      () => w.runs(j.id),
      (rs) => rs.length === 1 && rs[0].nodeId === "wait",
    );
    const entering = await t.ctx.db.pool.connect();
    try {
      await entering.query("BEGIN");
      await entering.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [ENTRY_LOCK_SPACE, w.ws.id]);
      clock.advance(61 * SECOND);
      const settled = t.ctx.journeys.settle(w.ws.id).then(() => "settled");
      expect(await Promise.race([settled, new Promise((r) => setTimeout(() => r("held up"), 3000))])).toBe("settled");
      expect((await w.runs(j.id))[0]).toMatchObject({ status: "Completed" });
    } finally {
      await entering.query("ROLLBACK");
      entering.release();
    }
  });
});
