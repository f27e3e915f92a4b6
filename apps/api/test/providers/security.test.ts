// Every provider route: no key / write key → 401, another workspace's id in body or query → 403,
// another workspace's provider id → 404, and its secret never reachable.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp, type TestWorkspace } from "../support/app.ts";
import { type AdminRoute, describeAdminRouteAuth } from "../support/admin-auth.ts";
import { bearer, request } from "../support/http.ts";

const PATH = "/api/admin/providers";
const SECRET = "b-workspace-smtp-password-XYZW";
let t: TestApp;
let a: TestWorkspace;
let b: TestWorkspace;
let bProviderId: string;

beforeAll(async () => {
  t = await createTestApp();
  a = t.workspace;
  b = await t.newWorkspace();
  const res = await request(t.url, "PUT", PATH, {
    headers: bearer(b.adminKey),
    body: { workspaceId: b.id, channel: "Email", type: "Smtp", config: { host: "smtp.b.test", port: 25, password: SECRET } },
  });
  bProviderId = res.body.id;
});
afterAll(async () => {
  await t.close();
});

const routes: AdminRoute[] = [
  { method: "PUT", path: () => PATH, body: (workspaceId) => ({ workspaceId, channel: "Email", type: "Log" }) },
  { method: "GET", path: () => PATH },
  { method: "GET", path: (id) => `${PATH}/${id}` },
  { method: "DELETE", path: (id) => `${PATH}/${id}` },
];

describeAdminRouteAuth(routes, () => ({ t, a, b, id: bProviderId }));

describe("another workspace's provider", () => {
  it("is invisible to get, delete and list", async () => {
    for (const method of ["GET", "DELETE"]) {
      const res = await request(t.url, method, `${PATH}/${bProviderId}`, { headers: bearer(a.adminKey) });
      expect(res.status).toBe(404);
    }
    const list = await request(t.url, "GET", PATH, { headers: bearer(a.adminKey) });
    expect(list.body.items.map((p: { id: string }) => p.id)).not.toContain(bProviderId);
  });

  it("is neither changed nor its secret inherited by a PUT with its id from another workspace", async () => {
    const res = await request(t.url, "PUT", PATH, {
      headers: bearer(a.adminKey),
      body: { id: bProviderId, workspaceId: a.id, channel: "Email", type: "Smtp", config: { host: "evil.test", port: 25 } },
    });
    expect(res.status).toBe(200);
    expect(res.body.workspaceId).toBe(a.id);
    expect(res.body.config).not.toHaveProperty("password");
    const original = await request(t.url, "GET", `${PATH}/${bProviderId}`, { headers: bearer(b.adminKey) });
    expect(original.body.config).toMatchObject({ host: "smtp.b.test", password: "••••XYZW" });
  });
});

it("documents every provider route in /openapi.json with its error responses", async () => {
  const res = await request(t.url, "GET", "/openapi.json");
  expect(res.status).toBe(200);
  const paths = res.body.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>;
  const expected: [string, string, string[]][] = [
    [PATH, "put", ["200", "400", "401", "403", "409"]],
    [PATH, "get", ["200", "400", "401", "403"]],
    [`${PATH}/{id}`, "get", ["200", "401", "403", "404"]],
    [`${PATH}/{id}`, "delete", ["204", "401", "403", "404"]],
  ];
  for (const [path, method, statuses] of expected) {
    const op = paths[path]?.[method];
    expect(op, `${method} ${path}`).toBeDefined();
    expect(Object.keys(op!.responses)).toEqual(expect.arrayContaining(statuses));
  }
});
