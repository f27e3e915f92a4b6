// The journey runtime, with the runtime's clock in the test's hands (no sleeps for delays):
// entries, every node, timers, versions, pause, exit segment, stats. docs/journeys.md.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../broadcasts/support.ts";
import { identify, SECOND, TestClock, track } from "../segments/support.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { definition, delaySeconds, type JourneyWorld, journeyWorld, message } from "./runtime-support.ts";

let t: TestApp;
let receiver: Receiver;
const clock = new TestClock();
/** Bodies the receiver got, by webhook-id (the delivery id). */
const got = new Map<string, string[]>();
const bodies = (tag: string) =>
  [...got.values()].flat().map((b) => JSON.parse(b)).filter((b) => b.tag === tag);

beforeAll(async () => {
  receiver = await startReceiver(({ id, body }, res) => {
    got.set(id, [...(got.get(id) ?? []), body]);
    res.writeHead(200).end();
  });
  t = await createTestApp({ webhookAllowedHosts: ["127.0.0.1"], clock: clock.read });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

let w: JourneyWorld;
const world = async () => (w = await journeyWorld(t, clock, receiver));

describe("entries", () => {
  it("EntryNode: the segment's members when the journey starts, then users who enter it; each message once", async () => {
    await world();
    const seg = await w.manualSegment();
    await w.add(seg, ["ann", "bob"]);
    await w.settle();
    const tpl = await w.template("e1");
    const j = await w.journey({ status: "Running", definition: definition({ segment: seg }, [message("hello", tpl)]) });
    expect(j.version).toBe(1);
    await waitFor(() => w.runs(j.id), (rs) => rs.length === 2 && rs.every((r) => r.status === "Completed"));
    await w.add(seg, ["cy"]);
    const runs = await waitFor(() => w.runs(j.id), (rs) => rs.length === 3 && rs.every((r) => r.status === "Completed"));
    expect(runs.map((r) => r.userId).sort()).toEqual(["ann", "bob", "cy"]);
    const ds = await w.deliveries(j.id);
    expect(ds.map((d) => [d.userId, d.status]).sort()).toEqual([["ann", "Sent"], ["bob", "Sent"], ["cy", "Sent"]]);
    expect(bodies("e1").map((b) => b.user).sort()).toEqual(["ann", "bob", "cy"]);
    const stats = await w.stats(j.id);
    expect(stats).toMatchObject({ entered: 3, active: 0, completed: 3, converted: 0 });
    expect(stats.nodes).toEqual([
      { id: "hello", type: "MessageNode", waiting: 0, reached: 3, sent: 3, skipped: 0, failed: 0, queued: 0 },
      { id: "ExitNode", type: "ExitNode", waiting: 0, reached: 3 },
    ]);
  });

  it("EventEntryNode: a run per committed track event of that name, with the event in the message's scope", async () => {
    await world();
    const tpl = await w.template("e2");
    const j = await w.journey({ status: "Running", definition: definition({ event: "Order Placed" }, [message("thanks", tpl)]) });
    await w.send([identify("dan", { plan: "pro" }, clock.now)]);
    await w.send([track({ userId: "dan" }, "Order Placed", clock.now, { sku: "sku-9" }), track({ userId: "eve" }, "Other", clock.now)]);
    const runs = await waitFor(() => w.runs(j.id), (rs) => rs.length === 1 && rs[0].status === "Completed");
    expect(runs[0]).toMatchObject({ userId: "dan", status: "Completed", event: { event: "Order Placed", properties: { sku: "sku-9" } } });
    await w.deliveries(j.id);
    expect(bodies("e2")).toEqual([{ user: "dan", tag: "e2", sku: "sku-9" }]);
  });
});

describe("timers", () => {
  it("DelayNode Second: the run waits until its due time at the clock, then goes on", async () => {
    await world();
    const seg = await w.manualSegment();
    const tpl = await w.template("d1");
    const j = await w.journey({
      status: "Running",
      definition: definition({ segment: seg }, [delaySeconds("wait", 60, "after"), message("after", tpl)]),
    });
    await w.add(seg, ["fay"]);
    await w.settle();
    const start = clock.now;
    let [run] = await w.runs(j.id);
    expect(run).toMatchObject({ status: "Active", nodeId: "wait", waitingUntil: start + 60 * SECOND });
    clock.advance(59 * SECOND);
    await w.settle();
    [run] = await w.runs(j.id);
    expect(run.status).toBe("Active");
    clock.advance(1 * SECOND);
    await w.settle();
    [run] = await w.runs(j.id);
    expect(run.status).toBe("Completed");
    expect((await w.stats(j.id)).nodes.find((n: any) => n.id === "wait")).toMatchObject({ reached: 1, waiting: 0 });
  });
});
