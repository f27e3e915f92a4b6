// Segment CRUD over HTTP: upsert keys, server-managed fields, definitionUpdatedAt, pagination,
// get/delete, and the journey guard on delete.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../support/app.ts";
import { bearer, request } from "../support/http.ts";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

const admin = () => bearer(t.workspace.adminKey);
const put = (body: Record<string, unknown>) =>
  request(t.url, "PUT", "/api/admin/segments", { headers: admin(), body: { workspaceId: t.workspace.id, ...body } });
const get = (id: string) => request(t.url, "GET", `/api/admin/segments/${id}`, { headers: admin() });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const trait = (value: string) => ({
  entryNode: { type: "Trait", id: "plan", path: "plan", operator: { type: "Equals", value } },
  nodes: [],
});

describe("PUT /api/admin/segments upserts", () => {
  it("creates a manual segment when no definition is sent", async () => {
    const res = await put({ name: "VIPs" });
    expect(res.status).toBe(200);
    expect(res.body.definition).toEqual({ entryNode: { type: "Manual", id: "manual" }, nodes: [] });
    expect(res.body.subscriptionGroupId).toBeUndefined();
  });

  it("updates by name: same id, new definition, createdAt kept", async () => {
    const first = await put({ name: "Pro users", definition: trait("pro") });
    await sleep(5);
    const second = await put({ name: "Pro users", definition: trait("enterprise") });
    expect(second.status).toBe(200);
    expect(second.body.id).toBe(first.body.id);
    expect(second.body.createdAt).toBe(first.body.createdAt);
    expect(second.body.definition.entryNode.operator.value).toBe("enterprise");
    expect(second.body.updatedAt).toBeGreaterThan(first.body.updatedAt);
    expect(second.body.definitionUpdatedAt).toBeGreaterThan(first.body.definitionUpdatedAt);
    const list = await request(t.url, "GET", "/api/admin/segments?limit=500", { headers: admin() });
    expect(list.body.items.filter((s: { name: string }) => s.name === "Pro users")).toHaveLength(1);
  });

  it("updates by id, renaming the segment", async () => {
    const first = await put({ name: "Old name", definition: trait("a") });
    const renamed = await put({ id: first.body.id, name: "New name" });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ id: first.body.id, name: "New name", definition: trait("a") });
    expect((await get(first.body.id)).body.name).toBe("New name");
    // The old name is free again: a PUT by that name creates a new segment.
    const again = await put({ name: "Old name" });
    expect(again.body.id).not.toBe(first.body.id);
  });

  it("creates with a client-chosen id not yet in the workspace", async () => {
    const id = randomUUID();
    const res = await put({ id, name: "Chosen id" });
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(id);
    expect((await get(id)).body.name).toBe("Chosen id");
  });

  it("refuses a non-UUID id with 400", async () => {
    const res = await put({ id: "seg-1", name: "Bad id" });
    expect(res.status).toBe(400);
    expect(res.body.error.issues.map((i: { path: string }) => i.path)).toEqual(["id"]);
  });

  it("refuses renaming onto another segment's name with 409, changing nothing", async () => {
    const a = await put({ name: "Taken A" });
    const b = await put({ name: "Taken B", definition: trait("b") });
    const res = await put({ id: b.body.id, name: "Taken A", definition: trait("changed") });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("CONFLICT");
    expect(res.body.error.message).toMatch(/Taken A/);
    // What the segment engine maintains (lastRecomputed, memberCount) may move meanwhile.
    const own = ({ lastRecomputed: _l, memberCount: _m, ...rest }: Record<string, unknown>) => rest;
    expect(own((await get(b.body.id)).body)).toEqual(own(b.body));
    expect(own((await get(a.body.id)).body)).toEqual(own(a.body));
    // A new id onto a taken name is a conflict too.
    const create = await put({ id: randomUUID(), name: "Taken A" });
    expect(create.status).toBe(409);
  });

  it("moves definitionUpdatedAt only when the definition changes", async () => {
    const def = {
      entryNode: { type: "And", id: "root", children: ["a", "b"] },
      nodes: [
        { type: "Trait", id: "a", path: "x", operator: { type: "Exists" } },
        { type: "Performed", id: "b", event: "Bought", times: 1, timesOperator: ">=" },
      ],
    };
    const created = await put({ name: "Stable", definition: def });
    await sleep(5);
    // Same definition with keys in another order and defaults left out: not a change.
    const reordered = {
      nodes: [
        { operator: { type: "Exists" }, path: "x", id: "a", type: "Trait" },
        { event: "Bought", id: "b", type: "Performed" },
      ],
      entryNode: { children: ["a", "b"], id: "root", type: "And" },
    };
    const same = await put({ name: "Stable", definition: reordered });
    expect(same.body.definitionUpdatedAt).toBe(created.body.definitionUpdatedAt);
    expect(same.body.updatedAt).toBe(created.body.updatedAt);
    await sleep(5);
    const renamed = await put({ id: created.body.id, name: "Stable renamed" });
    expect(renamed.body.updatedAt).toBeGreaterThan(created.body.updatedAt);
    expect(renamed.body.definitionUpdatedAt).toBe(created.body.definitionUpdatedAt);
    expect(renamed.body.definition).toEqual(def);
    await sleep(5);
    const changed = await put({ id: created.body.id, name: "Stable renamed", definition: { ...def, nodes: [...def.nodes].reverse() } });
    expect(changed.body.definitionUpdatedAt).toBeGreaterThan(created.body.definitionUpdatedAt);
    expect(changed.body.definitionUpdatedAt).toBe(changed.body.updatedAt);
  });

  it("ignores server-managed fields sent in the body", async () => {
    const res = await put({
      name: "Managed",
      createdAt: 1,
      updatedAt: 2,
      definitionUpdatedAt: 3,
      lastRecomputed: 4,
    });
    expect(res.status).toBe(200);
    expect(res.body.createdAt).toBeGreaterThan(1_600_000_000_000);
    expect(res.body.updatedAt).toBeGreaterThan(1_600_000_000_000);
    expect(res.body.definitionUpdatedAt).toBeGreaterThan(1_600_000_000_000);
    expect(res.body.lastRecomputed).toBeUndefined();
    // A GET response sent back as-is (what `tidings apply` round-trips) is accepted unchanged. The
    // segment engine may evaluate the new segment in between (setting lastRecomputed): its own field.
    const roundTrip = await put({ ...res.body, name: "Managed" });
    expect(roundTrip.status).toBe(200);
    const { lastRecomputed, ...rest } = roundTrip.body;
    expect(rest).toEqual(res.body);
    if (lastRecomputed !== undefined) expect(lastRecomputed).toBeGreaterThanOrEqual(res.body.updatedAt);
  });

  it("links, keeps and unlinks a subscription group", async () => {
    const group = await request(t.url, "PUT", "/api/admin/subscription-groups", {
      headers: admin(),
      body: { workspaceId: t.workspace.id, name: "Segment-linked", channel: "Email", type: "OptIn" },
    });
    const linked = await put({ name: "Linked", subscriptionGroupId: group.body.id });
    expect(linked.body.subscriptionGroupId).toBe(group.body.id);
    const kept = await put({ name: "Linked", definition: trait("x") });
    expect(kept.body.subscriptionGroupId).toBe(group.body.id);
    const unlinked = await put({ name: "Linked", subscriptionGroupId: null });
    expect(unlinked.status).toBe(200);
    expect(unlinked.body.subscriptionGroupId).toBeUndefined();
  });

  it("validates the body: name required and not blank; workspaceId optional (the key's workspace)", async () => {
    const res = await request(t.url, "PUT", "/api/admin/segments", { headers: admin(), body: { definition: trait("x") } });
    expect(res.status).toBe(400);
    expect(res.body.error.issues.map((i: { path: string }) => i.path)).toEqual(["name"]);
    const blank = await put({ name: " \t " });
    expect(blank.status).toBe(400);
    expect(blank.body.error.issues).toEqual([{ path: "name", message: "must not be empty or only whitespace" }]);
    const noWorkspace = await request(t.url, "PUT", "/api/admin/segments", { headers: admin(), body: { name: "  Keyless  " } });
    expect(noWorkspace.status).toBe(200);
    expect(noWorkspace.body).toMatchObject({ workspaceId: t.workspace.id, name: "Keyless" });
    // Trimmed names are the upsert key: the padded name finds the same segment.
    expect((await put({ name: "Keyless\n" })).body.id).toBe(noWorkspace.body.id);
  });
});

describe("GET /api/admin/segments", () => {
  it("pages through every segment in name order with nextCursor", async () => {
    const ws = await t.newWorkspace();
    const names = ["delta", "alpha", "echo", "charlie", "bravo"];
    for (const name of names) {
      const res = await request(t.url, "PUT", "/api/admin/segments", {
        headers: bearer(ws.adminKey),
        body: { workspaceId: ws.id, name },
      });
      expect(res.status).toBe(200);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const qs: string = `?workspaceId=${ws.id}&limit=2${cursor ? `&cursor=${cursor}` : ""}`;
      const res = await request(t.url, "GET", `/api/admin/segments${qs}`, { headers: bearer(ws.adminKey) });
      expect(res.status).toBe(200);
      expect(res.body.segments).toEqual(res.body.items);
      expect(res.body.items.length).toBeLessThanOrEqual(2);
      seen.push(...res.body.items.map((s: { name: string }) => s.name));
      cursor = res.body.nextCursor;
      pages++;
    } while (cursor && pages < 10);
    expect(pages).toBe(3);
    expect(seen).toEqual([...names].sort());
  });

  it("refuses a cursor it did not issue", async () => {
    const res = await request(t.url, "GET", "/api/admin/segments?cursor=garbage", { headers: admin() });
    expect(res.status).toBe(400);
    expect(res.body.error.issues[0].path).toBe("cursor");
  });
});

describe("GET and DELETE /api/admin/segments/:id", () => {
  it("gets a segment by id; 404 for an unknown id", async () => {
    const created = await put({ name: "Gettable", definition: trait("g") });
    const res = await get(created.body.id);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(created.body);
    const missing = await get(randomUUID());
    expect(missing.status).toBe(404);
    expect(missing.body.error).toMatchObject({ code: "NOT_FOUND", requestId: expect.any(String) });
  });

  it("deletes with 204, then 404 on get and on a second delete", async () => {
    const created = await put({ name: "Doomed" });
    await request(t.url, "PUT", `/api/admin/segments/${created.body.id}/members`, { headers: admin(), body: { add: ["u1"] } });
    const del = await request(t.url, "DELETE", `/api/admin/segments/${created.body.id}`, { headers: admin() });
    expect(del.status).toBe(204);
    expect(del.text).toBe("");
    expect((await get(created.body.id)).status).toBe(404);
    const again = await request(t.url, "DELETE", `/api/admin/segments/${created.body.id}`, { headers: admin() });
    expect(again.status).toBe(404);
    // Recreating the name starts with no members.
    const recreated = await put({ name: "Doomed" });
    const users = await request(t.url, "GET", `/api/admin/segments/${recreated.body.id}/users`, { headers: admin() });
    expect(users.body.items).toEqual([]);
  });

  it("refuses to delete a segment a running journey uses (409), and allows it once the journey is paused", async () => {
    const seg = await put({ name: "Journey entry", definition: trait("j") });
    const journey = (status: string) =>
      request(t.url, "PUT", "/api/admin/journeys", {
        headers: admin(),
        body: {
          name: "Onboarding",
          status,
          definition: {
            entryNode: { type: "EntryNode", segment: seg.body.id, child: "ExitNode" },
            nodes: [],
            exitNode: { type: "ExitNode" },
          },
        },
      });
    expect((await journey("Running")).status).toBe(200);
    const del = await request(t.url, "DELETE", `/api/admin/segments/${seg.body.id}`, { headers: admin() });
    expect(del.status).toBe(409);
    expect(del.body.error.code).toBe("CONFLICT");
    expect(del.body.error.message).toBe('Segment "Journey entry" is used by running journey(s): Onboarding');
    expect((await get(seg.body.id)).status).toBe(200);
    expect((await journey("Paused")).status).toBe(200);
    const ok = await request(t.url, "DELETE", `/api/admin/segments/${seg.body.id}`, { headers: admin() });
    expect(ok.status).toBe(204);
  });

  it("answers 400 for an id that is not a UUID", async () => {
    const res = await get("not-a-uuid");
    expect(res.status).toBe(400);
    expect(res.body.error.issues[0].path).toBe("params.id");
  });
});
