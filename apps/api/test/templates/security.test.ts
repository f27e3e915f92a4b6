// Every template route: no key / write key → 401, another workspace's id in body or query → 403,
// another workspace's template id → 404 (and nothing of it readable or changed).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp, type TestWorkspace } from "../support/app.ts";
import { type AdminRoute, describeAdminRouteAuth } from "../support/admin-auth.ts";
import { bearer, request } from "../support/http.ts";

const PATH = "/api/admin/content/templates";
let t: TestApp;
let a: TestWorkspace;
let b: TestWorkspace;
let bTemplateId: string;
const definition = { type: "Sms", body: "Hi {{ user.id }}" };

beforeAll(async () => {
  t = await createTestApp();
  a = t.workspace;
  b = await t.newWorkspace();
  const res = await request(t.url, "PUT", PATH, {
    headers: bearer(b.adminKey),
    body: { workspaceId: b.id, name: "b-template", definition },
  });
  bTemplateId = res.body.id;
});
afterAll(async () => {
  await t.close();
});

const routes: AdminRoute[] = [
  { method: "PUT", path: () => PATH, body: (workspaceId) => ({ workspaceId, name: "x", definition }) },
  { method: "GET", path: () => PATH },
  { method: "GET", path: (id) => `${PATH}/${id}` },
  { method: "DELETE", path: (id) => `${PATH}/${id}` },
  { method: "POST", path: () => `${PATH}/render`, body: (workspaceId) => ({ workspaceId, definition, user: { id: "u1" } }) },
];

describeAdminRouteAuth(routes, () => ({ t, a, b, id: bTemplateId }));

describe("another workspace's template", () => {
  it("is invisible: get and delete are 404, the list does not show it", async () => {
    for (const method of ["GET", "DELETE"]) {
      const res = await request(t.url, method, `${PATH}/${bTemplateId}`, { headers: bearer(a.adminKey) });
      expect(res.status).toBe(404);
    }
    const list = await request(t.url, "GET", PATH, { headers: bearer(a.adminKey) });
    expect(list.body.items.map((i: { id: string }) => i.id)).not.toContain(bTemplateId);
    const render = await request(t.url, "POST", `${PATH}/render`, {
      headers: bearer(a.adminKey),
      body: { templateId: bTemplateId, user: { id: "u1" } },
    });
    expect(render.status).toBe(404);
    const stillThere = await request(t.url, "GET", `${PATH}/${bTemplateId}`, { headers: bearer(b.adminKey) });
    expect(stillThere.status).toBe(200);
  });

  it("is not changed by a PUT with its id from another workspace", async () => {
    const res = await request(t.url, "PUT", PATH, {
      headers: bearer(a.adminKey),
      body: { id: bTemplateId, workspaceId: a.id, name: "hijack", definition: { type: "Sms", body: "pwned" } },
    });
    expect(res.status).toBe(200);
    expect(res.body.workspaceId).toBe(a.id);
    const original = await request(t.url, "GET", `${PATH}/${bTemplateId}`, { headers: bearer(b.adminKey) });
    expect(original.body).toMatchObject({ name: "b-template", definition });
  });
});

it("documents every template route in /openapi.json with its error responses", async () => {
  const res = await request(t.url, "GET", "/openapi.json");
  expect(res.status).toBe(200);
  const paths = res.body.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>;
  const expected: [string, string, string[]][] = [
    [PATH, "put", ["200", "400", "401", "403", "409"]],
    [PATH, "get", ["200", "400", "401", "403"]],
    [`${PATH}/{id}`, "get", ["200", "401", "403", "404"]],
    [`${PATH}/{id}`, "delete", ["204", "401", "403", "404", "409"]],
    [`${PATH}/render`, "post", ["200", "400", "401", "403", "404"]],
  ];
  for (const [path, method, statuses] of expected) {
    const op = paths[path]?.[method];
    expect(op, `${method} ${path}`).toBeDefined();
    expect(Object.keys(op!.responses)).toEqual(expect.arrayContaining(statuses));
  }
});
