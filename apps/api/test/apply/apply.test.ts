// POST /api/admin/apply: several resources in one transaction, in dependency order, all or none;
// dryRun runs every check and rolls back. Happy path, errors, security.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp, type TestWorkspace } from "../support/app.ts";
import { basic, bearer, request } from "../support/http.ts";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

const apply = (w: TestWorkspace, body: unknown, headers: Record<string, string> = bearer(w.adminKey)) =>
  request(t.url, "POST", "/api/admin/apply", { headers, body });
const names = async (w: TestWorkspace, path: string) =>
  ((await request(t.url, "GET", `${path}?limit=100`, { headers: bearer(w.adminKey) })).body.items as { name: string }[])
    .map((r) => r.name)
    .sort();

/** A journey, a segment naming a group, the group and a template — in the wrong order on purpose. */
function resources() {
  const group = randomUUID();
  const segment = randomUUID();
  const template = randomUUID();
  return [
    {
      kind: "Journey",
      resource: {
        name: "Onboarding",
        definition: {
          entryNode: { type: "EntryNode", segment, child: "send" },
          nodes: [{ id: "send", type: "MessageNode", channel: "Email", templateId: template, child: "ExitNode" }],
        },
      },
    },
    { kind: "Segment", resource: { id: segment, name: "Subscribers", subscriptionGroupId: group } },
    { kind: "SubscriptionGroup", resource: { id: group, name: "News", channel: "Email", type: "OptIn" } },
    {
      kind: "Template",
      resource: { id: template, name: "Welcome", definition: { type: "Email", from: "a@acme.test", subject: "Hi", body: "<p/>" } },
    },
  ];
}

describe("POST /api/admin/apply", () => {
  it("dryRun answers the plan (references to what the same request creates resolve) and writes nothing", async () => {
    const w = await t.newWorkspace();
    const res = await apply(w, { resources: resources(), dryRun: true });
    expect(res.status, res.text).toBe(200);
    expect(res.body.dryRun).toBe(true);
    expect(res.body.resources.map((r: { kind: string; result: string }) => [r.kind, r.result])).toEqual([
      ["Journey", "created"],
      ["Segment", "created"],
      ["SubscriptionGroup", "created"],
      ["Template", "created"],
    ]);
    // A name-keyed create has no id yet; an id-keyed one keeps its own.
    expect(res.body.resources[0].id).toBeUndefined();
    expect(res.body.resources[1].id).toBeDefined();
    for (const path of ["/api/admin/journeys", "/api/admin/segments", "/api/admin/subscription-groups", "/api/admin/content/templates"]) {
      expect(await names(w, path)).toEqual([]);
    }
  });

  it("writes everything in dependency order, then reports it unchanged, then an update", async () => {
    const w = await t.newWorkspace();
    const body = resources();
    const first = await apply(w, { resources: body });
    expect(first.status, first.text).toBe(200);
    expect(first.body.resources.map((r: { result: string }) => r.result)).toEqual(["created", "created", "created", "created"]);
    expect(await names(w, "/api/admin/segments")).toEqual(["Subscribers"]);
    const again = await apply(w, { resources: body });
    expect(again.body.resources.map((r: { result: string }) => r.result)).toEqual(["unchanged", "unchanged", "unchanged", "unchanged"]);
    const changed = await apply(w, { resources: [{ kind: "SubscriptionGroup", resource: { ...body[2]!.resource, type: "OptOut" } }] });
    expect(changed.body.resources).toEqual([{ kind: "SubscriptionGroup", name: "News", id: body[2]!.resource.id, result: "updated" }]);
  });

  it("all or none: a name held under another id is a 409 naming the resource and what to do; nothing is written", async () => {
    const w = await t.newWorkspace();
    expect((await apply(w, { resources: [{ kind: "Segment", resource: { name: "Taken" } }] })).status).toBe(200);
    const body = {
      resources: [
        { kind: "SubscriptionGroup", resource: { name: "Would be created", channel: "Sms", type: "OptIn" } },
        { kind: "Segment", resource: { id: randomUUID(), name: "Taken" } },
      ],
    };
    for (const dryRun of [true, false]) {
      const res = await apply(w, { ...body, dryRun });
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe("CONFLICT");
      expect(res.body.error.message).toMatch(
        /^resources\.1 \(Segment "Taken"\): A segment named "Taken" already exists in this workspace; .*drop `id` to update it, or choose another name$/,
      );
    }
    expect(await names(w, "/api/admin/subscription-groups")).toEqual([]);
    expect(await names(w, "/api/admin/segments")).toEqual(["Taken"]);
  });

  it("a refused resource's issues are under resources.<index>.resource; an unknown reference is a 400", async () => {
    const w = await t.newWorkspace();
    const liquid = await apply(w, {
      resources: [
        { kind: "Segment", resource: { name: "Fine" } },
        { kind: "Template", resource: { name: "Broken", definition: { type: "Sms", body: "{{ user.id " } } },
      ],
    });
    expect(liquid.status).toBe(400);
    expect(liquid.body.error.message).toMatch(/^resources\.1 \(Template "Broken"\): /);
    expect(liquid.body.error.issues[0].path).toBe("resources.1.resource.definition.body");
    const orphan = await apply(w, { resources: [{ kind: "Segment", resource: { name: "Orphan", subscriptionGroupId: randomUUID() } }] });
    expect(orphan.status).toBe(400);
    expect(orphan.body.error.issues[0].path).toBe("resources.0.resource.subscriptionGroupId");
    expect(await names(w, "/api/admin/segments")).toEqual([]);

    const schema = await apply(w, { resources: [{ kind: "Widget", resource: {} }] });
    expect(schema.status).toBe(400);
    expect((await apply(w, { resources: [] })).status).toBe(400);
  });

  it("security: no key, a write key, another workspace named in a resource", async () => {
    const w = await t.newWorkspace();
    const other = await t.newWorkspace();
    const body = { resources: [{ kind: "Segment", resource: { name: "S" } }] };
    expect((await apply(w, body, {})).status).toBe(401);
    expect([401, 403]).toContain((await apply(w, body, basic(Buffer.from(`${w.writeKey}:`).toString("base64")))).status);
    expect([401, 403]).toContain((await apply(w, body, bearer(w.writeKey))).status);
    const cross = await apply(w, { resources: [{ kind: "Segment", resource: { name: "S", workspaceId: other.id } }] });
    expect(cross.status).toBe(403);
    expect(await names(other, "/api/admin/segments")).toEqual([]);
    expect(await names(w, "/api/admin/segments")).toEqual([]);
  });
});
