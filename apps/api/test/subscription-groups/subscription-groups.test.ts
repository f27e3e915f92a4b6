// Subscription groups over HTTP: upserts, list, get, delete (and what blocks it), assignments.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../support/app.ts";
import { basic, bearer, request } from "../support/http.ts";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

const admin = () => bearer(t.workspace.adminKey);
const put = (body: Record<string, unknown>) =>
  request(t.url, "PUT", "/api/admin/subscription-groups", { headers: admin(), body: { workspaceId: t.workspace.id, ...body } });
const get = (id: string) => request(t.url, "GET", `/api/admin/subscription-groups/${id}`, { headers: admin() });
const del = (id: string) => request(t.url, "DELETE", `/api/admin/subscription-groups/${id}`, { headers: admin() });
const assign = (id: string, body: Record<string, unknown>) =>
  request(t.url, "PUT", `/api/admin/subscription-groups/${id}/assignments`, { headers: admin(), body });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("PUT /api/admin/subscription-groups", () => {
  it("creates a group and answers with every field", async () => {
    const before = Date.now();
    const res = await put({ name: "Product news", channel: "Email", type: "OptOut" });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      workspaceId: t.workspace.id,
      name: "Product news",
      channel: "Email",
      type: "OptOut",
      createdAt: expect.any(Number),
      updatedAt: expect.any(Number),
    });
    expect(res.body.createdAt).toBeGreaterThanOrEqual(before - 1000);
    expect((await get(res.body.id)).body).toEqual(res.body);
  });

  it("upserts by name and by id; a no-op PUT keeps updatedAt", async () => {
    const first = await put({ name: "Alerts", channel: "Sms", type: "OptIn" });
    await sleep(5);
    const same = await put({ name: "Alerts", channel: "Sms", type: "OptIn" });
    expect(same.body).toEqual(first.body);
    const byName = await put({ name: "Alerts", channel: "MobilePush", type: "OptOut" });
    expect(byName.body).toMatchObject({ id: first.body.id, channel: "MobilePush", type: "OptOut", createdAt: first.body.createdAt });
    expect(byName.body.updatedAt).toBeGreaterThan(first.body.updatedAt);
    const byId = await put({ id: first.body.id, name: "Alerts (push)", channel: "MobilePush", type: "OptOut" });
    expect(byId.body).toMatchObject({ id: first.body.id, name: "Alerts (push)" });
    const id = randomUUID();
    const created = await put({ id, name: "Webhooks", channel: "Webhook", type: "OptIn" });
    expect(created.body.id).toBe(id);
  });

  it("ignores server-managed fields", async () => {
    const res = await put({ name: "Managed", channel: "Email", type: "OptIn", createdAt: 5, updatedAt: "whenever" });
    expect(res.status).toBe(200);
    expect(res.body.createdAt).toBeGreaterThan(1_600_000_000_000);
    expect(res.body.updatedAt).toBeGreaterThan(1_600_000_000_000);
  });

  it("409 when renaming onto another group's name", async () => {
    await put({ name: "First", channel: "Email", type: "OptIn" });
    const second = await put({ name: "Second", channel: "Email", type: "OptIn" });
    const res = await put({ id: second.body.id, name: "First", channel: "Email", type: "OptIn" });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("CONFLICT");
    expect((await get(second.body.id)).body.name).toBe("Second");
  });

  it("400 naming unknown channel and type values and missing fields", async () => {
    const res = await put({ name: "Bad", channel: "Pigeon", type: "Maybe" });
    expect(res.status).toBe(400);
    expect(res.body.error.issues.map((i: { path: string }) => i.path).sort()).toEqual(["channel", "type"]);
    const missing = await put({});
    expect(missing.body.error.issues.map((i: { path: string }) => i.path).sort()).toEqual(["channel", "name", "type"]);
  });
});

describe("GET /api/admin/subscription-groups", () => {
  it("pages through groups in name order", async () => {
    const ws = await t.newWorkspace();
    const names = ["c", "a", "e", "b", "d"];
    for (const name of names) {
      const res = await request(t.url, "PUT", "/api/admin/subscription-groups", {
        headers: bearer(ws.adminKey),
        body: { workspaceId: ws.id, name, channel: "Email", type: "OptIn" },
      });
      expect(res.status).toBe(200);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const path: string = `/api/admin/subscription-groups?limit=2${cursor ? `&cursor=${cursor}` : ""}`;
      const res = await request(t.url, "GET", path, { headers: bearer(ws.adminKey) });
      expect(res.status).toBe(200);
      expect(res.body.subscriptionGroups).toEqual(res.body.items);
      seen.push(...res.body.items.map((g: { name: string }) => g.name));
      cursor = res.body.nextCursor;
      pages++;
    } while (cursor && pages < 10);
    expect(pages).toBe(3);
    expect(seen).toEqual([...names].sort());
  });
});

describe("DELETE /api/admin/subscription-groups/:id", () => {
  it("deletes with 204; then 404 on get and delete", async () => {
    const g = await put({ name: "Short-lived", channel: "Sms", type: "OptIn" });
    expect((await del(g.body.id)).status).toBe(204);
    expect((await get(g.body.id)).status).toBe(404);
    expect((await del(g.body.id)).status).toBe(404);
    expect((await get(randomUUID())).status).toBe(404);
  });

  it("409 while a segment links the group or names it in a SubscriptionGroup node", async () => {
    const g = await put({ name: "Referenced", channel: "Email", type: "OptOut" });
    const linkSeg = (body: Record<string, unknown>) =>
      request(t.url, "PUT", "/api/admin/segments", { headers: admin(), body: { workspaceId: t.workspace.id, ...body } });
    const linked = await linkSeg({ name: "Linked segment", subscriptionGroupId: g.body.id });
    expect(linked.status).toBe(200);
    const res = await del(g.body.id);
    expect(res.status).toBe(409);
    expect(res.body.error.message).toMatch(/Linked segment/);

    await linkSeg({ name: "Linked segment", subscriptionGroupId: null });
    const node = await linkSeg({
      name: "Node segment",
      definition: { entryNode: { type: "SubscriptionGroup", id: "s", subscriptionGroupId: g.body.id } },
    });
    expect(node.status).toBe(200);
    const again = await del(g.body.id);
    expect(again.status).toBe(409);
    expect(again.body.error.message).toMatch(/Node segment/);

    await linkSeg({ name: "Node segment", definition: { entryNode: { type: "Everyone", id: "e" } } });
    expect((await del(g.body.id)).status).toBe(204);
  });

  it("409 while a running journey uses the group", async () => {
    const g = await put({ name: "Journey group", channel: "Email", type: "OptIn" });
    const template = await t.ctx.db.prisma.messageTemplate.create({
      data: {
        workspaceId: t.workspace.id,
        name: "welcome",
        definition: { type: "Email", from: "a@example.com", subject: "Hi", body: "Hello" },
      },
    });
    const journey = await request(t.url, "PUT", "/api/admin/journeys", {
      headers: admin(),
      body: {
        name: "Welcome flow",
        status: "Running",
        definition: {
          entryNode: { type: "EventEntryNode", event: "Signed Up", child: "m" },
          nodes: [
            { type: "MessageNode", id: "m", channel: "Email", templateId: template.id, subscriptionGroupId: g.body.id, child: "ExitNode" },
          ],
          exitNode: { type: "ExitNode" },
        },
      },
    });
    expect(journey.status).toBe(200);
    const res = await del(g.body.id);
    expect(res.status).toBe(409);
    expect(res.body.error.message).toMatch(/Welcome flow/);
    expect((await get(g.body.id)).status).toBe(200);
  });
});

describe("assignments", () => {
  const listed = async (id: string, qs = "") => {
    const res = await request(t.url, "GET", `/api/admin/subscription-groups/${id}/assignments${qs}`, { headers: admin() });
    expect(res.status).toBe(200);
    expect(res.body.assignments).toEqual(res.body.items);
    return res.body as { items: { userId: string; subscribed: boolean; updatedAt: number }[]; nextCursor: string | null };
  };

  it("records subscribe and unsubscribe choices; a later call overrides", async () => {
    const g = await put({ name: "Digest", channel: "Email", type: "OptIn" });
    const first = await assign(g.body.id, { subscribe: ["u1", "u2", "u2"], unsubscribe: ["u3"] });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ subscribed: 2, unsubscribed: 1 });
    expect((await listed(g.body.id)).items.map((a) => [a.userId, a.subscribed])).toEqual([
      ["u1", true],
      ["u2", true],
      ["u3", false],
    ]);
    const second = await assign(g.body.id, { unsubscribe: ["u1"] });
    expect(second.body).toEqual({ subscribed: 0, unsubscribed: 1 });
    const after = await listed(g.body.id);
    expect(after.items.find((a) => a.userId === "u1")?.subscribed).toBe(false);
    expect(after.items).toHaveLength(3);
  });

  it("resolves linked identities to the user they belong to", async () => {
    const ingest = await request(t.url, "POST", "/api/public/apps/identify", {
      headers: basic(t.workspace.writeKey),
      body: { userId: "bob", anonymousId: "anon-bob" },
    });
    expect(ingest.status).toBe(204);
    const g = await put({ name: "Linked", channel: "Sms", type: "OptOut" });
    await assign(g.body.id, { unsubscribe: ["anon-bob"] });
    expect((await listed(g.body.id)).items.map((a) => [a.userId, a.subscribed])).toEqual([["bob", false]]);
  });

  it("400 when a user is in both lists, naming the item; nothing recorded", async () => {
    const g = await put({ name: "Both", channel: "Email", type: "OptIn" });
    const res = await assign(g.body.id, { subscribe: ["x", "y"], unsubscribe: ["y"] });
    expect(res.status).toBe(400);
    expect(res.body.error.issues.map((i: { path: string }) => i.path)).toEqual(["unsubscribe.0"]);
    expect((await listed(g.body.id)).items).toEqual([]);
  });

  it("pages through assignments in user id order", async () => {
    const g = await put({ name: "Paged", channel: "Email", type: "OptIn" });
    await assign(g.body.id, { subscribe: ["p3", "p1", "p5"], unsubscribe: ["p2", "p4"] });
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await listed(g.body.id, `?limit=2${cursor ? `&cursor=${cursor}` : ""}`);
      seen.push(...page.items.map((a) => a.userId));
      cursor = page.nextCursor;
      pages++;
    } while (cursor && pages < 10);
    expect(pages).toBe(3);
    expect(seen).toEqual(["p1", "p2", "p3", "p4", "p5"]);
  });

  it("404 for an unknown group; deleting a group drops its assignments", async () => {
    expect((await assign(randomUUID(), { subscribe: ["u"] })).status).toBe(404);
    const g = await put({ name: "Recycled", channel: "Email", type: "OptIn" });
    await assign(g.body.id, { subscribe: ["u"] });
    expect((await del(g.body.id)).status).toBe(204);
    const again = await put({ id: g.body.id, name: "Recycled", channel: "Email", type: "OptIn" });
    expect(again.status).toBe(200);
    expect((await listed(g.body.id)).items).toEqual([]);
  });
});
