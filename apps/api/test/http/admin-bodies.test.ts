// The rules every admin request body follows, checked route by route: unknown fields are a 400
// naming each one (at the top and inside definitions), `workspaceId` may be left out (the key's
// workspace), server-managed fields are accepted and ignored, and blank names are refused.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, ROOT_KEY, type TestApp } from "../support/app.ts";
import { bearer, request } from "../support/http.ts";

let t: TestApp;
let manualSegment: string;
let group: string;
beforeAll(async () => {
  t = await createTestApp();
  const admin = bearer(t.workspace.adminKey);
  manualSegment = (await request(t.url, "PUT", "/api/admin/segments", { headers: admin, body: { name: "hand-picked" } })).body.id;
  group = (
    await request(t.url, "PUT", "/api/admin/subscription-groups", {
      headers: admin,
      body: { name: "news", channel: "Email", type: "OptOut" },
    })
  ).body.id;
});
afterAll(async () => {
  await t.close();
});

interface BodyRoute {
  method: string;
  label: string;
  path: () => string;
  /** A valid body without `workspaceId`; `name` is filled in per call where the route has one. */
  body: () => Record<string, unknown>;
  /** Status of a successful call. */
  ok: number;
  root?: boolean;
  /** The body with a misspelt field below the top level, and the issue path it must produce. */
  nested?: [() => Record<string, unknown>, string];
  named?: boolean;
  upsert?: boolean;
  /** Whether the body takes `workspaceId` (root routes do not). */
  workspaced?: boolean;
}

const email = { type: "Email", from: "a@acme.test", subject: "Hi", body: "Hello" };
const routes: BodyRoute[] = [
  {
    method: "PUT",
    label: "PUT /api/admin/segments",
    path: () => "/api/admin/segments",
    body: () => ({ definition: { entryNode: { type: "Trait", id: "t", path: "plan", operator: { type: "Equals", value: "pro" } } } }),
    ok: 200,
    named: true,
    upsert: true,
    workspaced: true,
    nested: [
      () => ({
        definition: { entryNode: { type: "Trait", id: "t", path: "plan", operator: { type: "Equals", value: "pro", vlaue: "x" } } },
      }),
      "definition.entryNode.operator.vlaue",
    ],
  },
  {
    method: "PUT",
    label: "PUT /api/admin/segments/:id/members",
    path: () => `/api/admin/segments/${manualSegment}/members`,
    body: () => ({ add: ["ada"] }),
    ok: 200,
    workspaced: true,
  },
  {
    method: "PUT",
    label: "PUT /api/admin/content/templates",
    path: () => "/api/admin/content/templates",
    body: () => ({ definition: email, draft: { type: "Sms", body: "Hi" } }),
    ok: 200,
    named: true,
    upsert: true,
    workspaced: true,
    nested: [() => ({ definition: email, draft: { type: "Sms", body: "Hi", sender: "Acme" } }), "draft.sender"],
  },
  {
    method: "POST",
    label: "POST /api/admin/content/templates/render",
    path: () => "/api/admin/content/templates/render",
    // The inline `user` is traits: it keeps any field.
    body: () => ({ definition: { type: "Sms", body: "Hi {{ user.name }}" }, user: { id: "u1", name: "Ada", anyTrait: { deep: true } } }),
    ok: 200,
    workspaced: true,
    nested: [() => ({ definition: { ...email, reply_to: "b@acme.test" }, user: { id: "u1" } }), "definition.reply_to"],
  },
  {
    method: "PUT",
    label: "PUT /api/admin/subscription-groups",
    path: () => "/api/admin/subscription-groups",
    body: () => ({ channel: "Sms", type: "OptIn" }),
    ok: 200,
    named: true,
    upsert: true,
    workspaced: true,
  },
  {
    method: "PUT",
    label: "PUT /api/admin/subscription-groups/:id/assignments",
    path: () => `/api/admin/subscription-groups/${group}/assignments`,
    body: () => ({ subscribe: ["ada"], unsubscribe: ["bob"] }),
    ok: 200,
    workspaced: true,
  },
  {
    method: "PUT",
    label: "PUT /api/admin/providers",
    path: () => "/api/admin/providers",
    body: () => ({ channel: "Webhook", type: "Log" }),
    ok: 200,
    upsert: true,
    workspaced: true,
    nested: [
      () => ({ channel: "Webhook", type: "Webhook", config: { signingSecret: "s".repeat(32), signingAlgo: "sha1" } }),
      "config.signingAlgo",
    ],
  },
  {
    method: "PUT",
    label: "PUT /api/admin/journeys",
    path: () => "/api/admin/journeys",
    body: () => ({ canRunMultiple: true }),
    ok: 200,
    named: true,
    upsert: true,
    workspaced: true,
    nested: [
      () => ({ definition: { entryNode: { type: "EventEntryNode", event: "Signed Up", child: "ExitNode", filter: {} }, nodes: [] } }),
      "definition.entryNode.filter",
    ],
  },
  {
    method: "POST",
    label: "POST /api/admin/api-keys",
    path: () => "/api/admin/api-keys",
    body: () => ({}),
    ok: 201,
    named: true,
    workspaced: true,
  },
  {
    method: "POST",
    label: "POST /api/admin/write-keys",
    path: () => "/api/admin/write-keys",
    body: () => ({}),
    ok: 201,
    named: true,
    workspaced: true,
  },
  {
    method: "POST",
    label: "POST /api/admin/workspaces",
    path: () => "/api/admin/workspaces",
    body: () => ({}),
    ok: 201,
    named: true,
    root: true,
  },
  {
    method: "POST",
    label: "POST /api/admin/workspaces/:id/api-keys",
    path: () => `/api/admin/workspaces/${t.workspace.id}/api-keys`,
    body: () => ({}),
    ok: 201,
    named: true,
    root: true,
  },
];

const call = (route: BodyRoute, body: Record<string, unknown>) =>
  request(t.url, route.method, route.path(), { headers: bearer(route.root ? ROOT_KEY : t.workspace.adminKey), body });
const withName = (route: BodyRoute, body: Record<string, unknown>) => (route.named ? { name: `n-${randomUUID()}`, ...body } : body);

describe.each(routes)("$label", (route) => {
  it("works without workspaceId (the key's workspace)", async () => {
    const res = await call(route, withName(route, route.body()));
    expect(res.status, JSON.stringify(res.body)).toBe(route.ok);
    if (route.workspaced && typeof res.body.workspaceId === "string") expect(res.body.workspaceId).toBe(t.workspace.id);
  });

  it("refuses unknown top-level fields, one issue per field, nothing stored", async () => {
    const name = `typo-${randomUUID()}`;
    const res = await call(route, { ...route.body(), ...(route.named ? { name } : {}), workspace_id: t.workspace.id, dryRun: true });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("VALIDATION_FAILED");
    expect(res.body.error.issues).toEqual([
      // The closest known field is suggested (issue 21): workspaceId where the body takes one; none is close to dryRun.
      { path: "workspace_id", message: `unknown field "workspace_id"${route.workspaced ? ' (did you mean "workspaceId"?)' : ""}` },
      { path: "dryRun", message: 'unknown field "dryRun"' },
    ]);
    if (route.named) {
      const stored = await t.ctx.db.prisma.$queryRawUnsafe<{ n: number }[]>(
        `SELECT (SELECT count(*) FROM segments WHERE name = $1) + (SELECT count(*) FROM message_templates WHERE name = $1)
          + (SELECT count(*) FROM subscription_groups WHERE name = $1) + (SELECT count(*) FROM journeys WHERE name = $1)
          + (SELECT count(*) FROM workspaces WHERE name = $1) + (SELECT count(*) FROM api_keys WHERE name = $1) AS n`,
        name,
      );
      expect(Number(stored[0]!.n)).toBe(0);
    }
  });

  if (route.nested) {
    const [nested, path] = route.nested;
    it(`refuses a misspelt field inside the body (${path})`, async () => {
      const res = await call(route, withName(route, nested()));
      expect(res.status).toBe(400);
      expect(res.body.error.issues).toEqual([{ path, message: expect.stringContaining("unknown field") }]);
    });
  }

  if (route.named) {
    it("refuses an empty or whitespace-only name, trims the others", async () => {
      for (const name of ["", "   ", "\t\n"]) {
        const res = await call(route, { ...route.body(), name });
        expect(res.status).toBe(400);
        expect(res.body.error.issues).toEqual([{ path: "name", message: "must not be empty or only whitespace" }]);
      }
      const name = `padded-${randomUUID()}`;
      const res = await call(route, { ...route.body(), name: `  ${name}\n` });
      expect(res.status).toBe(route.ok);
      expect(res.body.name ?? res.body.workspace?.name).toBe(name);
    });
  }

  if (route.upsert) {
    it("accepts the server-managed fields and ignores them", async () => {
      const before = Date.now();
      const res = await call(route, {
        ...withName(route, route.body()),
        createdAt: 1,
        updatedAt: "yesterday",
        definitionUpdatedAt: null,
        lastRecomputed: { any: "thing" },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.createdAt).toBeGreaterThanOrEqual(before - 1000);
      expect(res.body.updatedAt).toBeGreaterThanOrEqual(before - 1000);
      expect(res.body.lastRecomputed).toBeUndefined();
    });
  }
});

describe("query strings", () => {
  it("workspaceId is optional on lists and single reads", async () => {
    for (const path of ["/api/admin/segments", `/api/admin/segments/${manualSegment}`, "/api/admin/api-keys", "/api/admin/events"]) {
      const res = await request(t.url, "GET", path, { headers: bearer(t.workspace.adminKey) });
      expect(res.status, path).toBe(200);
    }
  });
});

describe("values PostgreSQL cannot store", () => {
  // Found by the property tests (test/properties): each was a 500 from the database, and an
  // unpaired surrogate in a name was stored altered (as U+FFFD).
  const deep = (levels: number) => {
    let v: unknown = "leaf";
    for (let i = 0; i < levels; i++) v = { a: v };
    return v;
  };
  const draft = (extra: Record<string, unknown>) => ({ nodes: [], edges: [], ...extra });
  it.each([
    ["a NUL in a segment name", "PUT", "/api/admin/segments", { name: "a\u0000b" }, "name", "contains a NUL character"],
    [
      "an unpaired surrogate in a segment name",
      "PUT",
      "/api/admin/segments",
      { name: "a\ud800b" },
      "name",
      "contains an unpaired surrogate",
    ],
    [
      "a NUL in a segment definition",
      "PUT",
      "/api/admin/segments",
      { name: "s", definition: { entryNode: { type: "Trait", id: "t", path: "plan\u0000", operator: { type: "Exists" } } } },
      "definition.entryNode.path",
      "contains a NUL character",
    ],
    [
      "a NUL in a template body",
      "PUT",
      "/api/admin/content/templates",
      { name: "t", definition: { type: "Sms", body: "Hi\u0000" } },
      "definition.body",
      "contains a NUL character",
    ],
    [
      "an unpaired surrogate in a journey draft's editor state",
      "PUT",
      "/api/admin/journeys",
      { name: "j", draft: draft({ viewport: { label: "\udfff" } }) },
      "draft.viewport.label",
      "contains an unpaired surrogate",
    ],
    [
      "a NUL in a key of a journey draft",
      "PUT",
      "/api/admin/journeys",
      { name: "j", draft: draft({ "\u0000": {} }) },
      "draft",
      "contains a NUL character",
    ],
    [
      "a journey draft nested 70 levels deep",
      "PUT",
      "/api/admin/journeys",
      { name: "j", draft: draft({ deep: deep(70) }) },
      expect.stringMatching(/^draft\.deep(\.a)+$/),
      "nested too deeply",
    ],
    [
      "a NUL in a subscription group name",
      "PUT",
      "/api/admin/subscription-groups",
      { name: "g\u0000", channel: "Sms", type: "OptIn" },
      "name",
      "contains a NUL character",
    ],
    [
      "a NUL in the userId a render looks up",
      "POST",
      "/api/admin/content/templates/render",
      { definition: { type: "Sms", body: "Hi" }, userId: "u\u0000" },
      "userId",
      "contains a NUL character",
    ],
  ] as const)("%s → 400 naming the field, nothing stored", async (_what, method, path, body, issuePath, message) => {
    const before = await storedNames();
    const res = await request(t.url, method, path, { headers: bearer(t.workspace.adminKey), body });
    expect(res.status, res.text).toBe(400);
    expect(res.body.error.code).toBe("VALIDATION_FAILED");
    expect(res.body.error.issues).toEqual([{ path: issuePath, message }]);
    expect(await storedNames()).toEqual(before);
  });

  const storedNames = async () =>
    (
      await t.ctx.db.prisma.$queryRaw<{ name: string }[]>`
        SELECT name FROM segments UNION ALL SELECT name FROM message_templates UNION ALL SELECT name FROM journeys
        UNION ALL SELECT name FROM subscription_groups ORDER BY 1`
    ).map((r) => r.name);
});
