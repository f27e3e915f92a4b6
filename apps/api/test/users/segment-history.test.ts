// A user's segment entries and exits on GET /api/admin/users/:userId, newest first, in two
// workspaces that use the same segment names and user ids.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { segmentWorld } from "../segments/support.ts";
import { createTestApp, type TestApp } from "../support/app.ts";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

describe("a user's segment history", () => {
  it("lists the user's entries and exits, newest first, of its own workspace only", async () => {
    const [mine, theirs] = [await segmentWorld(t), await segmentWorld(t)];
    const vip = await mine.segment(undefined, "vip");
    const trial = await mine.segment(undefined, "trial");
    const put = (w: typeof mine, id: string, body: object) => w.admin("PUT", `/api/admin/segments/${id}/members`, body);
    await put(mine, vip, { add: ["ann"] });
    await mine.settle();
    await put(mine, trial, { add: ["ann"] });
    await mine.settle();
    await put(mine, vip, { remove: ["ann"] });
    await mine.settle();
    const elsewhere = await theirs.segment(undefined, "vip");
    await put(theirs, elsewhere, { add: ["ann"] });
    await theirs.settle();

    const user = await mine.admin("GET", "/api/admin/users/ann");
    expect(user.segmentChanges.map((c: any) => [c.name, c.entered])).toEqual([
      ["vip", false],
      ["trial", true],
      ["vip", true],
    ]);
    expect(user.segmentChanges[0].segmentId).toBe(vip);
    expect(user.segmentChanges[0].at).toBeGreaterThanOrEqual(user.segmentChanges[2].at);
    expect(user.segments.map((s: any) => s.name)).toEqual(["trial"]);
    const other = await theirs.admin("GET", "/api/admin/users/ann");
    expect(other.segmentChanges.map((c: any) => [c.segmentId, c.entered])).toEqual([[elsewhere, true]]);

    // A deleted segment's history goes with it.
    await mine.admin("DELETE", `/api/admin/segments/${vip}`);
    expect((await mine.admin("GET", "/api/admin/users/ann")).segmentChanges.map((c: any) => c.name)).toEqual(["trial"]);
  });
});
