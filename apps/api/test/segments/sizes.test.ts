// A segment's size over time (GET /api/admin/segments/{id}/sizes): the evaluations that change a
// segment record its size per hour, and each point is the size after the last change before it;
// two workspaces with the same names and user ids each see their own.
import type { SegmentDefinition } from "@tidings/schema";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../support/app.ts";
import { bearer, request } from "../support/http.ts";
import { identify, segmentWorld, TestClock } from "./support.ts";

const HOUR = 3_600_000;
// Three days ago, 30 minutes into an hour: every record lands in a known hour.
const H0 = Math.floor((Date.now() - 3 * 24 * HOUR) / HOUR) * HOUR;
const clock = new TestClock(H0 + 30 * 60_000);
let t: TestApp;

beforeAll(async () => {
  t = await createTestApp({ clock: clock.read });
});
afterAll(async () => {
  await t?.close();
});

const pro: SegmentDefinition = {
  entryNode: { type: "Trait", id: "p", path: "plan", operator: { type: "Equals", value: "pro" } },
  nodes: [],
};

describe("segment size history", () => {
  it("answers the size at the end of each hour and day, null before the history starts", async () => {
    const a = await segmentWorld(t);
    const b = await segmentWorld(t);
    const sa = await a.segment(pro, "Pro");
    const sb = await b.segment(pro, "Pro");
    // Created empty: size 0 recorded for hour H0, then replaced within the hour by the enters.
    await a.settle();
    await b.settle();
    await a.send(["ann", "bob"].map((u) => identify(u, { plan: "pro" }, clock.now)));
    await b.send(["ann"].map((u) => identify(u, { plan: "pro" }, clock.now)));
    await a.settle();
    await b.settle();
    clock.advance(2 * HOUR); // hour H0 + 2
    await a.send(["cy", "dee", "eve"].map((u) => identify(u, { plan: "pro" }, clock.now)));
    await a.settle();
    clock.advance(24 * HOUR); // hour H0 + 26
    await a.send([identify("bob", { plan: "free" }, clock.now)]);
    await a.settle();

    const sizes = async (w: typeof a, id: string, query: string) =>
      (await w.admin("GET", `/api/admin/segments/${id}/sizes?${query}`)) as {
        interval: string;
        points: { at: number; size: number | null }[];
      };
    const hourly = await sizes(a, sa, `interval=hour&from=${H0 - HOUR}&to=${H0 + 4 * HOUR}`);
    expect(hourly.points).toEqual([
      { at: H0, size: null },
      { at: H0 + HOUR, size: 2 },
      { at: H0 + 2 * HOUR, size: 2 },
      { at: H0 + 3 * HOUR, size: 5 },
      { at: H0 + 4 * HOUR, size: 5 },
    ]);
    const later = await sizes(a, sa, `interval=hour&from=${H0 + 26 * HOUR}&to=${H0 + 27 * HOUR}`);
    expect(later.points).toEqual([{ at: H0 + 27 * HOUR, size: 4 }]);
    // Days (UTC) up to now: the last point is now, with today's size.
    const daily = await sizes(a, sa, "interval=day");
    expect(daily.interval).toBe("day");
    expect(daily.points).toHaveLength(31);
    expect(daily.points.at(-1)!.size).toBe(4);
    expect(daily.points.at(-1)!.at).toBeGreaterThan(Date.now() - 60_000);
    // The other workspace's segment of the same name, over the same users, is its own.
    expect((await sizes(b, sb, `interval=hour&from=${H0}&to=${H0 + 4 * HOUR}`)).points.map((p) => p.size)).toEqual([1, 1, 1, 1]);
    const foreign = await request(t.url, "GET", `/api/admin/segments/${sa}/sizes`, { headers: bearer(b.ws.adminKey) });
    expect(foreign.status).toBe(404);
  });

  it("refuses more than 2 000 points and `from` after `to`, naming the field", async () => {
    const w = await segmentWorld(t);
    const id = await w.segment(pro);
    const ask = (query: string) => request(t.url, "GET", `/api/admin/segments/${id}/sizes?${query}`, { headers: bearer(w.ws.adminKey) });
    const many = await ask(`interval=hour&from=0&to=${Date.now()}`);
    expect(many.status).toBe(400);
    expect(many.body.error.issues[0]).toMatchObject({ path: "query.from", message: expect.stringMatching(/at most 2000 hours/) });
    const backwards = await ask(`from=${Date.now()}&to=${Date.now() - 10 * 24 * HOUR}`);
    expect(backwards.status).toBe(400);
    expect((await ask("interval=week")).status).toBe(400);
  });
});
