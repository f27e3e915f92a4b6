// Unsubscribe links survive a TIDINGS_SECRET_KEY rotation: the public route accepts a link signed
// with the old key while it is configured as TIDINGS_SECRET_KEY_PREVIOUS, and no longer once it
// is not.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signUnsubscribeToken, UNSUBSCRIBE_PATH } from "../../src/subscription-groups/unsubscribe-token.ts";
import { identify, segmentWorld, type SegmentWorld } from "../segments/support.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { request } from "../support/http.ts";

const OLD_KEY = "old-secret-key-0123456789abcdef0123456789";
const NEW_KEY = "new-secret-key-0123456789abcdef0123456789";

let t: TestApp;
let w: SegmentWorld;
let group: { id: string };

beforeAll(async () => {
  t = await createTestApp({ secretKey: NEW_KEY, previousSecretKey: OLD_KEY });
  w = await segmentWorld(t);
  const now = Date.now();
  await w.send([identify("amy", { email: "amy@example.test" }, now - 1000), identify("ben", { email: "ben@example.test" }, now - 1000)]);
  group = await w.admin("PUT", "/api/admin/subscription-groups", { name: "Weekly", channel: "Email", type: "OptOut" });
});
afterAll(async () => {
  await t?.close();
});

const link = (token: string) => `${UNSUBSCRIBE_PATH}?token=${encodeURIComponent(token)}`;
const oneClick = (token: string) =>
  request(t.url, "POST", link(token), {
    headers: { "content-type": "application/x-www-form-urlencoded" },
    raw: "List-Unsubscribe=One-Click",
  });
const tokenFor = (key: string, userId: string) =>
  signUnsubscribeToken(key, { workspaceId: w.ws.id, userId, subscriptionGroupId: group.id });
const unsubscribed = async () => {
  const assignments = await w.admin("GET", `/api/admin/subscription-groups/${group.id}/assignments`);
  return assignments.items.filter((a: { subscribed: boolean }) => !a.subscribed).map((a: { userId: string }) => a.userId);
};

describe("unsubscribe links across a key rotation", () => {
  it("a link signed with the previous key shows the page and unsubscribes", async () => {
    const token = tokenFor(OLD_KEY, "amy");
    const page = await request(t.url, "GET", link(token));
    expect(page.status, page.text).toBe(200);
    expect(page.text).toContain("Stop receiving “Weekly” messages?");
    const res = await oneClick(token);
    expect(res.status, res.text).toBe(200);
    expect(await unsubscribed()).toEqual(["amy"]);
  });

  it("a link signed with a key that is neither current nor previous is not valid", async () => {
    const res = await oneClick(tokenFor("some-other-key-0123456789abcdef0123456789", "ben"));
    expect(res.status, res.text).toBe(400);
    expect(res.text).toContain("This unsubscribe link is not valid.");
    expect(await unsubscribed()).toEqual(["amy"]);
  });

  it("once TIDINGS_SECRET_KEY_PREVIOUS is gone, a link signed with the old key is not valid; the current key's still is", async () => {
    // As a restart without the variable would configure it (routes read the config per request).
    t.ctx.config.previousSecretKey = undefined;
    const old = await oneClick(tokenFor(OLD_KEY, "ben"));
    expect(old.status, old.text).toBe(400);
    expect(await unsubscribed()).toEqual(["amy"]);
    const current = await oneClick(tokenFor(NEW_KEY, "ben"));
    expect(current.status, current.text).toBe(200);
    expect((await unsubscribed()).sort()).toEqual(["amy", "ben"]);
  });
});
