import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp, type TestWorkspace } from "../support/app.ts";
import { bearer, request } from "../support/http.ts";
import { insertSegment, insertTemplate, issuePaths, putJourney, simpleDefinition } from "./fixtures.ts";

let t: TestApp;
let other: TestWorkspace;
beforeAll(async () => {
  t = await createTestApp();
  other = await t.newWorkspace();
});
afterAll(async () => {
  await t.close();
});

/** The journey of interface-spec.md: a draft with only its entry node, not started. */
const seedDraft = (segment: string) => ({
  nodes: [
    {
      id: "EntryNode",
      data: {
        type: "JourneyUiNodeDefinitionProps",
        nodeTypeProps: { type: "EntryUiNode", variant: { type: "EntryNode", segment, child: "node-2" } },
      },
    },
  ],
  edges: [{ source: "EntryNode", target: "node-2", data: { type: "JourneyUiDefinitionEdgeProps", disableMarker: true } }],
});

async function runningJourney() {
  const seg = await insertSegment(t, t.workspace.id);
  const tpl = await insertTemplate(t, t.workspace.id);
  const res = await putJourney(t, { definition: simpleDefinition(seg, tpl), status: "Running" });
  expect(res.status).toBe(200);
  return { id: res.body.id as string, name: res.body.name as string, seg, tpl };
}

describe("PUT /api/admin/journeys", () => {
  it("stores the interface-spec journey (incomplete draft) and answers with every field", async () => {
    const id = randomUUID();
    const draft = seedDraft(randomUUID());
    const before = Date.now();
    const res = await putJourney(t, { id, name: "Onboarding", canRunMultiple: false, status: "NotStarted", updatedAt: 5, draft });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id,
      workspaceId: t.workspace.id,
      name: "Onboarding",
      canRunMultiple: false,
      status: "NotStarted",
      draft,
      exitSegmentId: null,
      version: 0,
      createdAt: expect.any(Number),
      updatedAt: expect.any(Number),
    });
    expect(res.body.updatedAt).toBeGreaterThanOrEqual(before - 1000);
    const got = await request(t.url, "GET", `/api/admin/journeys/${id}`, { headers: bearer(t.workspace.adminKey) });
    expect(got.body).toEqual(res.body);
  });

  it("upserts by name without an id, by id when given, keeps omitted fields", async () => {
    const name = `by-name-${randomUUID()}`;
    const first = await putJourney(t, { name, canRunMultiple: true, draft: seedDraft("s") });
    const second = await putJourney(t, { name });
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ id: first.body.id, canRunMultiple: true, draft: seedDraft("s"), createdAt: first.body.createdAt });
    expect(second.body.updatedAt).toBeGreaterThanOrEqual(first.body.updatedAt);

    const renamed = await putJourney(t, { id: first.body.id, name: `${name}-renamed`, draft: null });
    expect(renamed.body).toMatchObject({ id: first.body.id, name: `${name}-renamed`, canRunMultiple: true });
    expect(renamed.body.draft).toBeUndefined();
  });

  it("renaming onto another journey's name is a 409", async () => {
    const a = await putJourney(t, {});
    const b = await putJourney(t, {});
    const res = await putJourney(t, { id: b.body.id, name: a.body.name });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("CONFLICT");
    const creating = await putJourney(t, { id: randomUUID(), name: a.body.name });
    expect(creating.status).toBe(409);
  });

  it("validates the body against the schema", async () => {
    const res = await putJourney(t, {
      id: "not-a-uuid",
      status: "Finished",
      draft: { nodes: [{ id: "x", data: { type: "Nope" } }], edges: [] },
    });
    expect(res.status).toBe(400);
    expect(issuePaths(res)).toEqual(expect.arrayContaining(["id", "status", "draft.nodes.0.data.type"]));
  });
});

describe("status", () => {
  it("NotStarted → Running ⇄ Paused, never back to NotStarted", async () => {
    const { id, name } = await runningJourney();
    const paused = await putJourney(t, { id, name, status: "Paused" });
    expect(paused.body.status).toBe("Paused");
    const back = await putJourney(t, { id, name, status: "NotStarted" });
    expect(back.status).toBe(400);
    expect(back.body.error.issues).toEqual([{ path: "status", message: expect.stringContaining("cannot go back to NotStarted") }]);
    const resumed = await putJourney(t, { id, name, status: "Running" });
    expect(resumed.body.status).toBe("Running");
    const again = await putJourney(t, { id, name, status: "NotStarted" });
    expect(again.status).toBe(400);
    expect((await request(t.url, "GET", `/api/admin/journeys/${id}`, { headers: bearer(t.workspace.adminKey) })).body.status).toBe(
      "Running",
    );
  });

  it("a journey that has not started cannot be paused", async () => {
    const created = await putJourney(t, {});
    const res = await putJourney(t, { id: created.body.id, name: created.body.name, status: "Paused" });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain("from NotStarted to Paused");
    expect(res.body.error.issues[0].message).toContain("only a running journey can be paused");
  });

  it("Running needs a definition", async () => {
    const res = await putJourney(t, { status: "Running" });
    expect(res.status).toBe(400);
    expect(res.body.error.issues).toEqual([{ path: "definition", message: expect.stringContaining("complete draft") }]);

    const incomplete = await putJourney(t, { status: "Running", draft: seedDraft(randomUUID()) });
    expect(incomplete.status).toBe(400);
    expect(incomplete.body.error.message).toContain("draft is incomplete");
    expect(issuePaths(incomplete)).toEqual(expect.arrayContaining(["draft.nodes", "draft.nodes.0"]));
    expect(incomplete.body.error.issues.map((i: { message: string }) => i.message).join("\n")).toMatch(/no exit node[\s\S]*"node-2"/);
  });

  it("resuming re-checks the stored definition against the workspace", async () => {
    const { id, name, tpl } = await runningJourney();
    await putJourney(t, { id, name, status: "Paused" });
    await t.ctx.db.prisma.messageTemplate.delete({ where: { workspaceId_id: { workspaceId: t.workspace.id, id: tpl } } });
    const res = await putJourney(t, { id, name, status: "Running" });
    expect(res.status).toBe(400);
    expect(res.body.error.issues).toEqual([
      { path: "definition.nodes.0.templateId", message: `no message template ${tpl} in this workspace` },
    ]);
  });

  it("an incomplete draft drops the definition of a journey not started, a started one keeps it", async () => {
    const seg = await insertSegment(t, t.workspace.id);
    const tpl = await insertTemplate(t, t.workspace.id);
    const created = await putJourney(t, { definition: simpleDefinition(seg, tpl) });
    expect(created.body.definition.entryNode.segment).toBe(seg);
    const edited = await putJourney(t, { id: created.body.id, name: created.body.name, draft: seedDraft(seg) });
    expect(edited.body.definition).toBeUndefined();

    const { id, name } = await runningJourney();
    const kept = await putJourney(t, { id, name, draft: seedDraft(seg) });
    expect(kept.status).toBe(200);
    expect(kept.body).toMatchObject({ status: "Running", draft: seedDraft(seg), definition: { nodes: [{ id: "m" }] } });
  });

  it("a running journey holds what its definition uses, as rows; pausing releases them, resuming takes them again", async () => {
    const { id, name, seg, tpl } = await runningJourney();
    const holds = async () => {
      const where = { workspaceId: t.workspace.id, referrerKind: "Journey" as const, referrerId: id };
      const [segments, templates] = await Promise.all([
        t.ctx.db.prisma.segmentReference.findMany({ where }),
        t.ctx.db.prisma.messageTemplateReference.findMany({ where }),
      ]);
      return { segments: segments.map((r) => r.targetId), templates: templates.map((r) => r.targetId) };
    };
    expect(await holds()).toEqual({ segments: [seg], templates: [tpl] });
    await putJourney(t, { id, name, status: "Paused" });
    expect(await holds()).toEqual({ segments: [], templates: [] });
    await putJourney(t, { id, name, status: "Running" });
    expect(await holds()).toEqual({ segments: [seg], templates: [tpl] });
  });
});

describe("GET /api/admin/journeys", () => {
  it("lists the workspace's journeys by name, paginated, never another workspace's", async () => {
    const ws = await t.newWorkspace();
    const asWs = { ...t, workspace: ws };
    for (const name of ["c", "a", "b"]) await putJourney(asWs, { name });
    await putJourney(t, { name: "a-of-another-workspace" });
    const p1 = await request(t.url, "GET", "/api/admin/journeys?limit=2", { headers: bearer(ws.adminKey) });
    expect(p1.status).toBe(200);
    expect(p1.body.items.map((j: { name: string }) => j.name)).toEqual(["a", "b"]);
    expect(p1.body.journeys).toEqual(p1.body.items);
    const p2 = await request(t.url, "GET", `/api/admin/journeys?limit=2&cursor=${p1.body.nextCursor}&workspaceId=${ws.id}`, {
      headers: bearer(ws.adminKey),
    });
    expect(p2.body.items.map((j: { name: string }) => j.name)).toEqual(["c"]);
    expect(p2.body.nextCursor).toBeNull();
  });

  it("refuses a forged cursor", async () => {
    const res = await request(t.url, "GET", "/api/admin/journeys?cursor=bm9wZQ", { headers: bearer(t.workspace.adminKey) });
    expect(res.status).toBe(400);
    expect(issuePaths(res)).toEqual(["cursor"]);
  });
});

describe("DELETE /api/admin/journeys/:id", () => {
  it("deletes (204), then 404; a running journey is a 409 until paused", async () => {
    const { id, name } = await runningJourney();
    const del = (wid = id) => request(t.url, "DELETE", `/api/admin/journeys/${wid}`, { headers: bearer(t.workspace.adminKey) });
    const running = await del();
    expect(running.status).toBe(409);
    expect(running.body.error.message).toContain("pause it");
    await putJourney(t, { id, name, status: "Paused" });
    expect((await del()).status).toBe(204);
    expect((await del()).status).toBe(404);
    const got = await request(t.url, "GET", `/api/admin/journeys/${id}`, { headers: bearer(t.workspace.adminKey) });
    expect(got.status).toBe(404);
    expect(got.body.error.code).toBe("NOT_FOUND");
  });
});

describe("security", () => {
  let id: string;
  beforeAll(async () => {
    id = (await putJourney(t, { draft: seedDraft("x") })).body.id;
  });
  const routes = () => [
    { method: "PUT", path: "/api/admin/journeys", body: { workspaceId: t.workspace.id, name: "sec" } },
    { method: "GET", path: "/api/admin/journeys" },
    { method: "GET", path: `/api/admin/journeys/${id}` },
    { method: "DELETE", path: `/api/admin/journeys/${id}` },
  ];

  it("no key and a write key get 401 on every route", async () => {
    for (const r of routes()) {
      for (const headers of [{}, bearer(t.workspace.writeKey)]) {
        const res = await request(t.url, r.method, r.path, { headers, body: r.body });
        expect(res.status, `${r.method} ${r.path}`).toBe(401);
        expect(res.body.error.code).toBe("UNAUTHORIZED");
      }
    }
  });

  it("naming another workspace gets 403 on every route", async () => {
    for (const r of routes()) {
      const path = r.body ? r.path : `${r.path}?workspaceId=${other.id}`;
      const body = r.body ? { ...r.body, workspaceId: other.id } : undefined;
      const res = await request(t.url, r.method, path, { headers: bearer(t.workspace.adminKey), body });
      expect(res.status, `${r.method} ${r.path}`).toBe(403);
      expect(res.body.error.code).toBe("FORBIDDEN");
    }
  });

  it("another workspace's journey id is a 404 and stays untouched", async () => {
    for (const method of ["GET", "DELETE"]) {
      const res = await request(t.url, method, `/api/admin/journeys/${id}`, { headers: bearer(other.adminKey) });
      expect(res.status, method).toBe(404);
    }
    // PUT with that id from the other workspace creates a journey of its own; ours is unchanged.
    const put = await request(t.url, "PUT", "/api/admin/journeys", {
      headers: bearer(other.adminKey),
      body: { id, workspaceId: other.id, name: "hijack", status: "NotStarted" },
    });
    expect(put.status).toBe(200);
    expect(put.body.workspaceId).toBe(other.id);
    const mine = await request(t.url, "GET", `/api/admin/journeys/${id}`, { headers: bearer(t.workspace.adminKey) });
    expect(mine.body).toMatchObject({ workspaceId: t.workspace.id, draft: seedDraft("x") });
    expect(mine.body.name).not.toBe("hijack");
  });
});
