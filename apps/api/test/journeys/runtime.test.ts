// The journey runtime, with the runtime's clock in the test's hands (no sleeps for delays):
// entries, every node, timers, versions, pause, exit segment, stats. docs/journeys.md.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../broadcasts/support.ts";
import { holdEngine, identify, SECOND, TestClock, track } from "../segments/support.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { fullDraft } from "./fixtures.ts";
import { definition, delaySeconds, type JourneyWorld, journeyWorld, message, runsByUser, waitForSegment } from "./runtime-support.ts";

let t: TestApp;
let receiver: Receiver;
const clock = new TestClock();
/** Bodies the receiver got, by webhook-id (the delivery id). */
const got = new Map<string, string[]>();
const bodies = (tag: string) =>
  [...got.values()]
    .flat()
    .map((b) => JSON.parse(b))
    .filter((b) => b.tag === tag);

beforeAll(async () => {
  receiver = await startReceiver(({ id, body }, res) => {
    got.set(id, [...(got.get(id) ?? []), body]);
    res.writeHead(200).end();
  });
  t = await createTestApp({ outboundAllowedHosts: ["127.0.0.1"], clock: clock.read });
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
    await waitFor(
      () => w.runs(j.id),
      (rs) => rs.length === 2 && rs.every((r) => r.status === "Completed"),
    );
    await w.add(seg, ["cy"]);
    const runs = await waitFor(
      () => w.runs(j.id),
      (rs) => rs.length === 3 && rs.every((r) => r.status === "Completed"),
    );
    expect(runs.map((r) => r.userId).sort()).toEqual(["ann", "bob", "cy"]);
    const ds = await w.deliveries(j.id);
    expect(ds.map((d) => [d.userId, d.status]).sort()).toEqual([
      ["ann", "Sent"],
      ["bob", "Sent"],
      ["cy", "Sent"],
    ]);
    expect(
      bodies("e1")
        .map((b) => b.user)
        .sort(),
    ).toEqual(["ann", "bob", "cy"]);
    const stats = await w.stats(j.id);
    expect(stats).toMatchObject({ entered: 3, active: 0, completed: 3, converted: 0 });
    expect(stats.nodes).toEqual([
      { id: "hello", type: "MessageNode", waiting: 0, reached: 3, sent: 3, skipped: 0, failed: 0, queued: 0, deferred: 0 },
      { id: "ExitNode", type: "ExitNode", waiting: 0, reached: 3 },
    ]);
  });

  it("EntryNode: members an evaluation under way commits after the journey starts still enter", async () => {
    await world();
    const seg = await w.manualSegment();
    // An evaluation under way: the engine's workspace lock held, a membership written, not yet
    // committed — begun before the journey runs, so it records no signal for it.
    const evaluation = await holdEngine(t.ctx.db.pool, w.ws.id);
    try {
      await evaluation.client.query("BEGIN");
      await evaluation.client.query(
        "INSERT INTO segment_memberships (workspace_id, segment_id, profile_id, entered_at) VALUES ($1, $2, 'wes', now())",
        [w.ws.id, seg],
      );
      const j = await w.journey({ status: "Running", definition: definition({ segment: seg }, [delaySeconds("wait", 60, "ExitNode")]) });
      await new Promise((r) => setTimeout(r, 500));
      await evaluation.client.query("COMMIT");
      await evaluation.release();
      const runs = await waitFor(
        () => w.runs(j.id),
        (rs) => rs.length === 1,
        5000,
      );
      expect(runs.map((r) => r.userId)).toEqual(["wes"]);
    } finally {
      await evaluation.release();
    }
  });

  it("EventEntryNode: a run per committed track event of that name, with the event in the message's scope", async () => {
    await world();
    const tpl = await w.template("e2");
    const j = await w.journey({ status: "Running", definition: definition({ event: "Order Placed" }, [message("thanks", tpl)]) });
    await w.send([identify("dan", { plan: "pro" }, clock.now)]);
    await w.send([track({ userId: "dan" }, "Order Placed", clock.now, { sku: "sku-9" }), track({ userId: "eve" }, "Other", clock.now)]);
    const runs = await waitFor(
      () => w.runs(j.id),
      (rs) => rs.length === 1 && rs[0].status === "Completed",
    );
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

describe("delays from user data", () => {
  it("LocalTime: the next hour:minute in the user's time zone, across both DST changes; an unknown zone is UTC", async () => {
    await world();
    const seg = await w.manualSegment();
    const j = await w.journey({
      status: "Running",
      definition: definition({ segment: seg }, [
        { id: "nine", type: "DelayNode", variant: { type: "LocalTime", hour: 9, minute: 0 }, child: "ExitNode" },
      ]),
    });
    const real = clock.now;
    const waits = async (at: string, users: Record<string, string | undefined>) => {
      clock.now = Date.parse(at);
      const ids = Object.keys(users).map((u) => `${u}-${at}`);
      await w.send(Object.entries(users).map(([u, tz]) => identify(`${u}-${at}`, tz ? { timezone: tz } : { plan: "x" }, clock.now)));
      await w.add(seg, ids);
      await w.settle();
      const runs = await w.runs(j.id);
      return Object.fromEntries(
        ids.map((id) => [id.split("-")[0], new Date(runs.find((r) => r.userId === id).waitingUntil).toISOString()]),
      );
    };
    try {
      // 2026-03-08 02:00 New York: clocks go forward (EST → EDT). 15:00 EST on the 7th.
      expect(
        await waits("2026-03-07T20:00:00.000Z", { ny: "America/New_York", tokyo: "Asia/Tokyo", mars: "Mars/Olympus", none: undefined }),
      ).toEqual({
        ny: "2026-03-08T13:00:00.000Z",
        tokyo: "2026-03-08T00:00:00.000Z",
        mars: "2026-03-08T09:00:00.000Z",
        none: "2026-03-08T09:00:00.000Z",
      });
      // 2026-11-01 02:00 New York: clocks go back (EDT → EST). 16:00 EDT on 31 October.
      expect(await waits("2026-10-31T20:00:00.000Z", { ny: "America/New_York", berlin: "Europe/Berlin" })).toEqual({
        ny: "2026-11-01T14:00:00.000Z",
        berlin: "2026-11-01T08:00:00.000Z",
      });
    } finally {
      clock.now = real;
    }
  });

  it("UserProperty: the trait's date (ISO or epoch s/ms) plus the offset; missing, invalid or past dates go on at once", async () => {
    await world();
    const seg = await w.manualSegment();
    const j = await w.journey({
      status: "Running",
      definition: definition({ segment: seg }, [
        {
          id: "before",
          type: "DelayNode",
          variant: { type: "UserProperty", userProperty: "trial.endsAt", offsetSeconds: -3600 },
          child: "ExitNode",
        },
      ]),
    });
    const hour = 3600 * SECOND;
    await w.send([
      identify("iso", { trial: { endsAt: new Date(clock.now + 2 * hour).toISOString() } }, clock.now),
      identify("secs", { trial: { endsAt: Math.floor((clock.now + 3 * hour) / 1000) } }, clock.now),
      identify("ms", { trial: { endsAt: clock.now + 4 * hour } }, clock.now),
      identify("missing", { plan: "x" }, clock.now),
      identify("junk", { trial: { endsAt: "soon" } }, clock.now),
      identify("past", { trial: { endsAt: new Date(clock.now - hour).toISOString() } }, clock.now),
    ]);
    await w.add(seg, ["iso", "secs", "ms", "missing", "junk", "past"]);
    await w.settle();
    const runs = Object.fromEntries((await w.runs(j.id)).map((r) => [r.userId, r]));
    expect(runs.iso.waitingUntil).toBe(clock.now + hour);
    expect(runs.secs.waitingUntil).toBe(clock.now + 2 * hour);
    expect(runs.ms.waitingUntil).toBe(clock.now + 3 * hour);
    for (const u of ["missing", "junk", "past"]) expect(runs[u].status).toBe("Completed");
  });
});

describe("branches", () => {
  it("SegmentSplitNode: membership from every event committed before, even while the engine is behind", async () => {
    await world();
    const seg = await w.manualSegment();
    const pro = await w.segment({
      entryNode: { type: "Trait", id: "p", path: "plan", operator: { type: "Equals", value: "pro" } },
      nodes: [],
    });
    const j = await w.journey({
      status: "Running",
      definition: definition({ segment: seg }, [
        delaySeconds("wait", 60, "split"),
        { id: "split", type: "SegmentSplitNode", segment: pro, trueChild: "yes", falseChild: "no" },
        delaySeconds("yes", 3600, "ExitNode"),
        delaySeconds("no", 3600, "ExitNode"),
      ]),
    });
    await w.send([identify("gil", { plan: "free" }, clock.now), identify("hal", { plan: "free" }, clock.now)]);
    await w.add(seg, ["gil", "hal"]);
    await w.settle();
    // The engine cannot apply anything while its workspace lock is held here.
    const engine = await holdEngine(t.ctx.db.pool, w.ws.id);
    try {
      await w.send([identify("gil", { plan: "pro" }, clock.now)]);
      clock.advance(60 * SECOND);
      await t.ctx.journeys.settle(w.ws.id);
      const runs = await runsByUser(w, j.id, "nodeId");
      expect(runs).toEqual({ gil: "yes", hal: "no" });
      expect(await w.members(pro)).toEqual([]);
    } finally {
      await engine.release();
    }
  });

  it("WaitForNode: a member goes on at once, a user who enters is woken (no clock move), the rest time out", async () => {
    await world();
    const seg = await w.manualSegment();
    const goal = await w.manualSegment();
    const j = await w.journey({
      status: "Running",
      definition: definition({ segment: seg }, [
        waitForSegment("wait", goal, "won", "lost"),
        delaySeconds("won", 7200, "ExitNode"),
        delaySeconds("lost", 7200, "ExitNode"),
      ]),
    });
    await w.add(goal, ["ida"]);
    await w.add(seg, ["ida", "jon", "kim"]);
    await w.settle();
    let runs = Object.fromEntries((await w.runs(j.id)).map((r) => [r.userId, r]));
    expect(runs.ida.nodeId).toBe("won");
    expect(runs.jon).toMatchObject({ nodeId: "wait", waitingUntil: clock.now + 3600 * SECOND });
    // Woken by the enter record, by the workers alone.
    await w.add(goal, ["jon"]);
    runs = Object.fromEntries(
      (
        await waitFor(
          () => w.runs(j.id),
          (rs) => rs.find((r) => r.userId === "jon").nodeId === "won",
        )
      ).map((r) => [r.userId, r]),
    );
    expect(runs.jon.nodeId).toBe("won");
    expect(runs.kim.nodeId).toBe("wait");
    clock.advance(3600 * SECOND);
    await w.settle();
    runs = Object.fromEntries((await w.runs(j.id)).map((r) => [r.userId, r]));
    expect(runs.kim.nodeId).toBe("lost");
  });

  it("RandomCohortNode: sticky per (journey, user), across runs and versions with the same percentages", async () => {
    await world();
    const seg = await w.manualSegment();
    const cohort = (wait: number) =>
      definition({ segment: seg }, [
        {
          id: "ab",
          type: "RandomCohortNode",
          children: [
            { percent: 50, child: "a" },
            { percent: 50, child: "b" },
          ],
        },
        delaySeconds("a", wait, "ExitNode"),
        delaySeconds("b", wait, "ExitNode"),
      ]);
    const j = await w.journey({ status: "Running", canRunMultiple: true, definition: cohort(60) });
    const users = Array.from({ length: 60 }, (_, i) => `u${i}`);
    await w.add(seg, users);
    await w.settle();
    const branch = async (status: string) => Object.fromEntries((await w.runs(j.id, `&status=${status}`)).map((r) => [r.userId, r.nodeId]));
    const first = await branch("Active");
    const a = Object.values(first).filter((n) => n === "a").length;
    expect(a).toBeGreaterThan(15);
    expect(a).toBeLessThan(45);
    clock.advance(60 * SECOND);
    await w.settle();
    // A new version with the same shares; the users leave and enter again.
    expect((await w.journey({ id: j.id, name: j.name, definition: cohort(120) })).version).toBe(2);
    await w.remove(seg, users);
    await w.settle();
    await w.add(seg, users);
    await w.settle();
    const runs = await w.runs(j.id, "&status=Active");
    expect(runs).toHaveLength(60);
    expect(runs.every((r) => r.version === 2)).toBe(true);
    expect(Object.fromEntries(runs.map((r) => [r.userId, r.nodeId]))).toEqual(first);
  });
});

describe("runs and lifecycle", () => {
  it("canRunMultiple: false — one run ever; true — a new run once the previous one ended", async () => {
    await world();
    const seg = await w.manualSegment();
    const tpl = await w.template("m1");
    const once = await w.journey({ status: "Running", definition: definition({ segment: seg }, [message("hi", tpl)]) });
    const again = await w.journey({
      status: "Running",
      canRunMultiple: true,
      definition: definition({ segment: seg }, [message("hi", tpl)]),
    });
    for (let i = 0; i < 2; i++) {
      await w.add(seg, ["lea"]);
      await w.settle();
      await w.remove(seg, ["lea"]);
      await w.settle();
    }
    expect((await w.runs(once.id)).map((r) => r.status)).toEqual(["Completed"]);
    expect((await w.runs(again.id)).map((r) => r.status)).toEqual(["Completed", "Completed"]);
    const user = await w.admin("GET", "/api/admin/users/lea");
    expect(user.journeyRuns).toHaveLength(3);
    expect(new Set(user.journeyRuns.map((r: any) => r.journeyName))).toEqual(new Set([once.name, again.name]));
  });

  it("Paused: due runs wait and nobody enters; Running again continues them", async () => {
    await world();
    const seg = await w.manualSegment();
    const j = await w.journey({ status: "Running", definition: definition({ segment: seg }, [delaySeconds("wait", 60, "ExitNode")]) });
    await w.add(seg, ["max"]);
    await w.settle();
    await w.journey({ id: j.id, name: j.name, status: "Paused" });
    clock.advance(61 * SECOND);
    await w.add(seg, ["ned"]);
    await w.settle();
    expect((await w.runs(j.id)).map((r) => [r.userId, r.status])).toEqual([["max", "Active"]]);
    await w.journey({ id: j.id, name: j.name, status: "Running" });
    await w.settle();
    expect((await w.runs(j.id)).map((r) => [r.userId, r.status])).toEqual([["max", "Completed"]]);
  });

  it("Running again: a wait satisfied while the journey was paused goes on at once", async () => {
    await world();
    const seg = await w.manualSegment();
    const goal = await w.manualSegment();
    const j = await w.journey({
      status: "Running",
      definition: definition({ segment: seg }, [waitForSegment("wait", goal, "won", "ExitNode"), delaySeconds("won", 7200, "ExitNode")]),
    });
    await w.add(seg, ["vic"]);
    await w.settle();
    await w.journey({ id: j.id, name: j.name, status: "Paused" });
    await w.add(goal, ["vic"]);
    await w.settle();
    expect((await w.runs(j.id))[0].nodeId).toBe("wait");
    await w.journey({ id: j.id, name: j.name, status: "Running" });
    clock.advance(SECOND);
    await w.settle();
    expect((await w.runs(j.id))[0].nodeId).toBe("won");
  });

  it("a new definition is a new version: waiting runs finish on theirs, new runs take it", async () => {
    await world();
    const seg = await w.manualSegment();
    const [v1, v2] = [await w.template("v1"), await w.template("v2")];
    const j = await w.journey({
      status: "Running",
      definition: definition({ segment: seg }, [delaySeconds("wait", 60, "say"), message("say", v1)]),
    });
    await w.add(seg, ["oli"]);
    await w.settle();
    const saved = await w.journey({
      id: j.id,
      name: j.name,
      definition: definition({ segment: seg }, [delaySeconds("wait", 60, "say"), message("say", v2)]),
    });
    expect(saved.version).toBe(2);
    await w.add(seg, ["pam"]);
    await w.settle();
    clock.advance(60 * SECOND);
    await w.settle();
    await w.deliveries(j.id);
    expect(bodies("v1").map((b) => b.user)).toEqual(["oli"]);
    expect(bodies("v2").map((b) => b.user)).toEqual(["pam"]);
    const stats = await w.stats(j.id, "version=1");
    expect(stats).toMatchObject({ version: 1, entered: 1, completed: 1 });
    expect(stats.versions.map((v: any) => [v.version, v.entered])).toEqual([
      [1, 1],
      [2, 1],
    ]);
  });

  it("exit segment: a run ends as soon as its user is in it (woken by the enter record), counted converted", async () => {
    await world();
    const seg = await w.manualSegment();
    const bought = await w.manualSegment();
    const j = await w.journey({
      status: "Running",
      exitSegmentId: bought,
      definition: definition({ segment: seg }, [delaySeconds("wait", 3600, "ExitNode")]),
    });
    expect(j.exitSegmentId).toBe(bought);
    await w.add(bought, ["ray"]);
    await w.add(seg, ["quin", "ray"]);
    await w.settle();
    // Checked on entry.
    expect(await runsByUser(w, j.id, "status")).toEqual({ quin: "Active", ray: "Converted" });
    await w.add(bought, ["quin"]);
    await waitFor(
      () => w.runs(j.id),
      (rs) => rs.every((r) => r.status === "Converted"),
    );
    expect(await w.stats(j.id)).toMatchObject({ entered: 2, active: 0, converted: 2, completed: 0 });
    // The exit segment is held while the journey runs.
    const del = await t.ctx.db.prisma.segment.count({ where: { id: bought } });
    expect(del).toBe(1);
    const res = await fetch(`${t.url}/api/admin/segments/${bought}?workspaceId=${w.ws.id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${w.ws.adminKey}` },
    });
    expect(res.status).toBe(409);
  });

  it("DELETE: 409 while running; a paused journey's runs end with it and its unsent messages are skipped", async () => {
    await world();
    const seg = await w.manualSegment();
    const j = await w.journey({ status: "Running", definition: definition({ segment: seg }, [delaySeconds("wait", 3600, "ExitNode")]) });
    await w.add(seg, ["sam"]);
    await w.settle();
    const del = () =>
      fetch(`${t.url}/api/admin/journeys/${j.id}?workspaceId=${w.ws.id}`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${w.ws.adminKey}` },
      });
    expect((await del()).status).toBe(409);
    await w.journey({ id: j.id, name: j.name, status: "Paused" });
    const [run] = await w.runs(j.id);
    const tpl = await w.template("gone");
    await t.ctx.db.pool.query(
      `INSERT INTO deliveries (workspace_id, id, user_id, channel, template_id, journey_id, run_id, node_id, status)
       VALUES ($1, gen_random_uuid(), 'sam', 'Webhook', $2, $3, $4, 'later', 'Queued')`,
      [w.ws.id, tpl, j.id, run.id],
    );
    expect((await del()).status).toBe(204);
    expect(await t.ctx.db.prisma.journeyRun.count({ where: { journeyId: j.id } })).toBe(0);
    const [d] = (await w.admin("GET", `/api/admin/deliveries?journeyId=${j.id}`)).items;
    expect(d).toMatchObject({ status: "Skipped", reason: "the journey was deleted" });
  });

  it("an exit segment that does not exist is a 400 naming exitSegmentId", async () => {
    await world();
    const seg = await w.manualSegment();
    const res = await fetch(`${t.url}/api/admin/journeys`, {
      method: "PUT",
      headers: { authorization: `Bearer ${w.ws.adminKey}`, "content-type": "application/json" },
      body: JSON.stringify({
        name: "bad-exit",
        status: "Running",
        exitSegmentId: "00000000-0000-4000-8000-000000000000",
        definition: definition({ segment: seg }, []),
      }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.issues.map((i: any) => i.path)).toEqual(["exitSegmentId"]);
  });

  it("stats read every count in one snapshot: a run that moves on while they are read shows at one node only", async () => {
    await world();
    const seg = await w.manualSegment();
    await w.add(seg, ["ann"]);
    await w.settle();
    const j = await w.journey({
      status: "Running",
      definition: definition({ segment: seg }, [message("hello", await w.template("snap"))]),
    });
    await waitFor(
      () => w.runs(j.id),
      (rs) => rs.length === 1 && rs[0].status === "Completed",
    );
    // Another process puts the run back at its message node with its message queued, and holds the
    // deliveries until the stats have begun reading; the stats see all of it or none of it.
    const other = await t.ctx.db.pool.connect();
    try {
      await other.query("BEGIN");
      await other.query(
        "UPDATE journey_runs SET status = 'Active', node_id = 'hello', waiting = true, ended_at = NULL WHERE workspace_id = $1 AND journey_id = $2",
        [w.ws.id, j.id],
      );
      await other.query("LOCK TABLE deliveries IN ACCESS EXCLUSIVE MODE");
      await other.query("UPDATE deliveries SET status = 'Queued' WHERE workspace_id = $1 AND journey_id = $2", [w.ws.id, j.id]);
      const reading = w.stats(j.id);
      // The stats' statement waits for the lock (matched by its start: pg_stat_activity keeps only
      // the first 1 024 bytes of a query).
      const statsWaiting = await waitFor(
        async () =>
          (
            await t.ctx.db.pool.query(
              "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'SELECT%(SELECT coalesce(json_agg(r), ''[]''::json) FROM (SELECT count(*)::int AS entered%'",
            )
          ).rowCount,
        (n) => (n ?? 0) > 0,
      );
      expect(statsWaiting).toBe(1);
      await other.query("COMMIT");
      // Before the move (completed, sent) or after it (waiting, queued); never half of each.
      const { active, completed, nodes } = await reading;
      const { waiting, sent, queued } = nodes[0];
      expect([
        [0, 1, 0, 1, 0],
        [1, 0, 1, 0, 1],
      ]).toContainEqual([active, completed, waiting, sent, queued]);
    } finally {
      other.release();
    }
  });
});

describe("the interface specification's editor draft", () => {
  it("its seed draft (EntryUiNode with `child`, edges with `disableMarker`), completed up to ExitNode, compiles and runs", async () => {
    await world();
    const seg = await w.manualSegment();
    const tpl = await w.template("spec");
    const edge = (source: string, target: string) => ({
      source,
      target,
      data: { type: "JourneyUiDefinitionEdgeProps", disableMarker: true },
    });
    const draft = {
      nodes: [
        {
          id: "EntryNode",
          data: {
            type: "JourneyUiNodeDefinitionProps",
            nodeTypeProps: { type: "EntryUiNode", variant: { type: "EntryNode", segment: seg, child: "node-2" } },
          },
        },
        {
          id: "node-2",
          data: { type: "JourneyUiNodeDefinitionProps", nodeTypeProps: { type: "MessageNode", channel: "Webhook", templateId: tpl } },
        },
        { id: "ExitNode", data: { type: "JourneyUiNodeDefinitionProps", nodeTypeProps: { type: "ExitNode" } } },
      ],
      edges: [edge("EntryNode", "node-2"), edge("node-2", "ExitNode")],
    };
    const j = await w.journey({ status: "Running", draft });
    expect(j.definition.nodes.map((n: any) => [n.id, n.type, n.child])).toEqual([["node-2", "MessageNode", "ExitNode"]]);
    await w.add(seg, ["xia"]);
    await waitFor(
      () => w.runs(j.id),
      (rs) => rs[0]?.status === "Completed",
    );
    await w.deliveries(j.id);
    expect(bodies("spec").map((b) => b.user)).toEqual(["xia"]);
  });

  it("compiles (EntryUiNode → delay → split → message → exit) and runs, and timer lateness is on /metrics", async () => {
    await world();
    const entry = await w.manualSegment();
    const vip = await w.manualSegment();
    const tpl = (
      await w.admin("PUT", "/api/admin/content/templates", {
        name: `mail-${Date.now()}`,
        definition: { type: "Email", from: "a@example.com", subject: "Hi", body: "Hello {{ user.id }}" },
      })
    ).id;
    const j = await w.journey({ status: "Running", draft: fullDraft({ entrySegment: entry, splitSegment: vip, templateId: tpl }) });
    expect(j.definition.entryNode).toMatchObject({ type: "EntryNode", segment: entry, child: "delay-1" });
    await w.send([identify("tia", { email: "tia@example.com" }, clock.now), identify("uma", { email: "uma@example.com" }, clock.now)]);
    await w.add(vip, ["tia"]);
    await w.add(entry, ["tia", "uma"]);
    await w.settle();
    clock.advance(3600 * SECOND + 250);
    await w.settle();
    expect((await w.runs(j.id)).map((r) => r.status)).toEqual(["Completed", "Completed"]);
    const nodes = Object.fromEntries((await w.stats(j.id)).nodes.map((n: any) => [n.id, n.reached]));
    expect(nodes).toEqual({ "delay-1": 2, "split-1": 2, "msg-1": 1, ExitNode: 2 });
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    expect(metrics).toMatch(/tidings_journey_timer_lateness_seconds_count [1-9]/);
  });
});
