import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp, type TestWorkspace } from "../support/app.ts";
import { bearer, request } from "../support/http.ts";

const PATH = "/api/admin/content/templates";
let t: TestApp;
let ws: TestWorkspace;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

const put = (body: Record<string, unknown>, w: TestWorkspace = ws) =>
  request(t.url, "PUT", PATH, { headers: bearer(w.adminKey), body: { workspaceId: w.id, ...body } });

const definitions = {
  MobilePush: {
    type: "MobilePush",
    title: "Hi {{ user.firstName }}",
    body: "Your cart misses you",
    imageUrl: "https://img.test/x.png",
    data: { screen: "cart", uid: "{{ user.id }}" },
  },
  Email: {
    type: "Email",
    from: "Acme <hello@acme.test>",
    subject: "Welcome, {{ user.firstName | default: 'friend' }}",
    body: "<p>Hello {{ user.firstName }}</p><a href='{{ unsubscribe_url }}'>unsubscribe</a>",
    replyTo: "support@acme.test",
    cc: "a@acme.test",
    bcc: "b@acme.test",
    headers: { "X-Campaign": "welcome" },
  },
  Sms: { type: "Sms", body: "Code {{ event.properties.code }}" },
  Webhook: {
    type: "Webhook",
    url: "https://hooks.test/{{ user.id }}",
    method: "POST",
    headers: { "X-Id": "{{ user.id }}" },
    body: '{"id":"{{ user.id }}"}',
  },
} as const;

describe("PUT /api/admin/content/templates", () => {
  beforeAll(async () => {
    ws = await t.newWorkspace();
  });

  it("stores the interface-spec MobilePush template and answers with the response fields", async () => {
    const before = Date.now();
    const definition = { type: "MobilePush", title: "Hello", body: "World", imageUrl: "https://img.test/a.png" };
    const res = await put({ name: "spec-template", definition });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: expect.any(String), workspaceId: ws.id, name: "spec-template", type: "MobilePush", definition });
    expect(res.body.updatedAt).toBeGreaterThanOrEqual(before - 1000);
    expect(res.body.updatedAt).toBeLessThanOrEqual(Date.now() + 1000);
    expect(res.body).not.toHaveProperty("draft");
    const got = await request(t.url, "GET", `${PATH}/${res.body.id}`, { headers: bearer(ws.adminKey) });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
  });

  for (const [kind, definition] of Object.entries(definitions)) {
    it(`round-trips a ${kind} definition and a ${kind} draft`, async () => {
      const asDefinition = await put({ name: `def-${kind}`, definition });
      expect(asDefinition.status).toBe(200);
      expect(asDefinition.body).toMatchObject({ type: kind, definition });
      const asDraft = await put({ name: `draft-${kind}`, draft: definition });
      expect(asDraft.status).toBe(200);
      expect(asDraft.body).toMatchObject({ type: kind, draft: definition });
      expect(asDraft.body).not.toHaveProperty("definition");
      const got = await request(t.url, "GET", `${PATH}/${asDraft.body.id}`, { headers: bearer(ws.adminKey) });
      expect(got.body.draft).toEqual(definition);
    });
  }

  it("derives type from definition, else draft, else Email; a client-sent type is ignored", async () => {
    const both = await put({ name: "type-both", type: "Sms", definition: definitions.Sms, draft: definitions.Webhook });
    expect(both.body.type).toBe("Sms");
    const draftOnly = await put({ name: "type-draft", type: "Email", draft: definitions.Webhook });
    expect(draftOnly.body.type).toBe("Webhook");
    const neither = await put({ name: "type-none", type: "MobilePush", updatedAt: 1, createdAt: 2 });
    expect(neither.status).toBe(200);
    expect(neither.body.type).toBe("Email");
    expect(neither.body.updatedAt).toBeGreaterThan(1000);
  });

  it("rejects a Liquid syntax error with a 400 naming the field, and stores nothing", async () => {
    const res = await put({ name: "broken", definition: { ...definitions.Email, subject: "Hi {{ user.firstName" } });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("VALIDATION_FAILED");
    expect(res.body.error.issues).toEqual([{ path: "definition.subject", message: expect.stringContaining("not closed") }]);
    const draft = await put({ name: "broken", draft: { ...definitions.Webhook, headers: { "X-Id": "{% if %}" } } });
    expect(draft.status).toBe(400);
    expect(draft.body.error.issues[0].path).toBe("draft.headers.X-Id");
    const unknownFilter = await put({ name: "broken", definition: { type: "Sms", body: "{{ user.id | nosuchfilter }}" } });
    expect(unknownFilter.status).toBe(400);
    expect(unknownFilter.body.error.issues[0]).toEqual({ path: "definition.body", message: expect.stringContaining("nosuchfilter") });
    const list = await request(t.url, "GET", PATH, { headers: bearer(ws.adminKey) });
    expect(list.body.items.map((i: { name: string }) => i.name)).not.toContain("broken");
  });

  it("validates the definition shape with issue paths", async () => {
    const res = await put({ name: "bad-shape", definition: { type: "MobilePush", body: "b" } });
    expect(res.status).toBe(400);
    expect(res.body.error.issues.map((i: { path: string }) => i.path)).toContain("definition.title");
    const unknownType = await put({ name: "bad-shape", definition: { type: "Fax", body: "b" } });
    expect(unknownType.status).toBe(400);
    expect(unknownType.body.error.issues[0].path).toBe("definition.type");
    const noName = await put({ definition: definitions.Sms });
    expect(noName.status).toBe(400);
    expect(noName.body.error.issues[0].path).toBe("name");
  });

  it("upserts by name: same id, new content, definition kept when omitted and removed with null", async () => {
    const first = await put({ name: "by-name", definition: definitions.Sms });
    const second = await put({ name: "by-name", draft: definitions.Email });
    expect(second.body.id).toBe(first.body.id);
    expect(second.body).toMatchObject({ definition: definitions.Sms, draft: definitions.Email, type: "Sms" });
    expect(second.body.updatedAt).toBeGreaterThanOrEqual(first.body.updatedAt);
    const cleared = await put({ name: "by-name", definition: null });
    expect(cleared.body.id).toBe(first.body.id);
    expect(cleared.body).not.toHaveProperty("definition");
    expect(cleared.body.type).toBe("Email");
  });

  it("upserts by id: renames, and creates with a client-chosen id", async () => {
    const created = await put({ name: "by-id", definition: definitions.Sms });
    const renamed = await put({ id: created.body.id, name: "by-id-renamed" });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ id: created.body.id, name: "by-id-renamed", definition: definitions.Sms });
    const old = await request(t.url, "GET", PATH, { headers: bearer(ws.adminKey), body: undefined });
    expect(old.body.items.map((i: { name: string }) => i.name)).not.toContain("by-id");
    const id = randomUUID();
    const chosen = await put({ id, name: "chosen-id", definition: definitions.Sms });
    expect(chosen.status).toBe(200);
    expect(chosen.body.id).toBe(id);
  });

  it("answers 409 when renaming onto another template's name", async () => {
    await put({ name: "taken" });
    const other = await put({ name: "free" });
    const res = await put({ id: other.body.id, name: "taken" });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("CONFLICT");
    const still = await request(t.url, "GET", `${PATH}/${other.body.id}`, { headers: bearer(ws.adminKey) });
    expect(still.body.name).toBe("free");
  });

  it("rejects an id that is not a UUID", async () => {
    const res = await put({ id: "not-a-uuid", name: "x" });
    expect(res.status).toBe(400);
    expect(res.body.error.issues[0].path).toBe("id");
  });
});

describe("GET and DELETE /api/admin/content/templates", () => {
  let listWs: TestWorkspace;
  beforeAll(async () => {
    listWs = await t.newWorkspace();
    for (const name of ["charlie", "alpha", "echo", "bravo", "delta"]) await put({ name, definition: definitions.Sms }, listWs);
  });

  it("lists by name with cursor pagination", async () => {
    const names: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = `?limit=2${cursor ? `&cursor=${cursor}` : ""}`;
      const res = await request(t.url, "GET", PATH + query, { headers: bearer(listWs.adminKey) });
      expect(res.status).toBe(200);
      expect(res.body.templates).toEqual(res.body.items);
      expect(res.body.items.length).toBeLessThanOrEqual(2);
      names.push(...res.body.items.map((i: { name: string }) => i.name));
      cursor = res.body.nextCursor;
      pages++;
    } while (cursor);
    expect(names).toEqual(["alpha", "bravo", "charlie", "delta", "echo"]);
    expect(pages).toBe(3);
  });

  it("rejects a forged cursor with 400", async () => {
    const forged = Buffer.from(JSON.stringify(["a", "not-a-uuid"])).toString("base64url");
    const res = await request(t.url, "GET", `${PATH}?cursor=${forged}`, { headers: bearer(listWs.adminKey) });
    expect(res.status).toBe(400);
    expect(res.body.error.issues[0].path).toBe("cursor");
  });

  it("deletes (204), then 404 on get and delete", async () => {
    const created = await put({ name: "doomed" }, listWs);
    const del = await request(t.url, "DELETE", `${PATH}/${created.body.id}`, { headers: bearer(listWs.adminKey) });
    expect(del.status).toBe(204);
    expect(del.text).toBe("");
    for (const method of ["GET", "DELETE"]) {
      const res = await request(t.url, method, `${PATH}/${created.body.id}`, { headers: bearer(listWs.adminKey) });
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe("NOT_FOUND");
    }
  });

  it("refuses to delete a template a running journey uses (409)", async () => {
    const created = await put({ name: "in-use", definition: definitions.Sms }, listWs);
    const segment = await t.ctx.db.prisma.segment.create({
      data: { workspaceId: listWs.id, name: "everyone", definition: { entryNode: { type: "Everyone", id: "e" }, nodes: [] } },
    });
    const journey = await request(t.url, "PUT", "/api/admin/journeys", {
      headers: bearer(listWs.adminKey),
      body: {
        name: "uses-template",
        status: "Running",
        definition: {
          entryNode: { type: "EntryNode", segment: segment.id, child: "m" },
          nodes: [{ id: "m", type: "MessageNode", channel: "Sms", templateId: created.body.id, child: "ExitNode" }],
          exitNode: { type: "ExitNode" },
        },
      },
    });
    expect(journey.status).toBe(200);
    const del = await request(t.url, "DELETE", `${PATH}/${created.body.id}`, { headers: bearer(listWs.adminKey) });
    expect(del.status).toBe(409);
    expect(del.body.error.message).toContain("uses-template");
    const still = await request(t.url, "GET", `${PATH}/${created.body.id}`, { headers: bearer(listWs.adminKey) });
    expect(still.status).toBe(200);
  });
});
