// Every subscription-group route: no key and a write key get 401, another workspace's workspaceId
// gets 403, another workspace's group id gets 404, and nothing of the other workspace changes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp, type TestWorkspace } from "../support/app.ts";
import { basic, bearer, request } from "../support/http.ts";

let t: TestApp;
let a: TestWorkspace;
let b: TestWorkspace;
let groupA: Record<string, unknown> & { id: string };
let groupB: Record<string, unknown> & { id: string };

beforeAll(async () => {
  t = await createTestApp();
  a = t.workspace;
  b = await t.newWorkspace();
  const put = async (ws: TestWorkspace, name: string) => {
    const res = await request(t.url, "PUT", "/api/admin/subscription-groups", {
      headers: bearer(ws.adminKey),
      body: { workspaceId: ws.id, name, channel: "Email", type: "OptIn" },
    });
    expect(res.status).toBe(200);
    return res.body;
  };
  groupA = await put(a, "Mine");
  groupB = await put(b, "Theirs");
  const assigned = await request(t.url, "PUT", `/api/admin/subscription-groups/${groupB.id}/assignments`, {
    headers: bearer(b.adminKey),
    body: { subscribe: ["b-user"] },
  });
  expect(assigned.status).toBe(200);
});
afterAll(async () => {
  await t.close();
});

const base = "/api/admin/subscription-groups";
const qs = (workspaceId?: string) => (workspaceId ? `?workspaceId=${workspaceId}` : "");
const routes: { name: string; method: string; byId: boolean; build(id: string, ws?: string): { path: string; body?: unknown } }[] = [
  {
    name: `PUT ${base}`,
    method: "PUT",
    byId: false,
    build: (_id, ws) => ({ path: base, body: { workspaceId: ws ?? a.id, name: "Intruder", channel: "Sms", type: "OptOut" } }),
  },
  { name: `GET ${base}`, method: "GET", byId: false, build: (_id, ws) => ({ path: `${base}${qs(ws)}` }) },
  { name: `GET ${base}/:id`, method: "GET", byId: true, build: (id, ws) => ({ path: `${base}/${id}${qs(ws)}` }) },
  { name: `DELETE ${base}/:id`, method: "DELETE", byId: true, build: (id, ws) => ({ path: `${base}/${id}${qs(ws)}` }) },
  {
    name: `PUT ${base}/:id/assignments`,
    method: "PUT",
    byId: true,
    build: (id, ws) => ({ path: `${base}/${id}/assignments`, body: { ...(ws ? { workspaceId: ws } : {}), unsubscribe: ["b-user"] } }),
  },
  {
    name: `GET ${base}/:id/assignments`,
    method: "GET",
    byId: true,
    build: (id, ws) => ({ path: `${base}/${id}/assignments${qs(ws)}` }),
  },
];

async function expectBUntouched() {
  const res = await request(t.url, "GET", `${base}/${groupB.id}`, { headers: bearer(b.adminKey) });
  expect(res.status).toBe(200);
  expect(res.body).toEqual(groupB);
  const assignments = await request(t.url, "GET", `${base}/${groupB.id}/assignments`, { headers: bearer(b.adminKey) });
  expect(assignments.body.items.map((x: { userId: string; subscribed: boolean }) => [x.userId, x.subscribed])).toEqual([["b-user", true]]);
  const list = await request(t.url, "GET", base, { headers: bearer(b.adminKey) });
  expect(list.body.items.map((g: { name: string }) => g.name)).toEqual(["Theirs"]);
}

describe.each(routes)("$name", (route) => {
  it("401 without a key, with an unknown key, and with a write key (Bearer or Basic)", async () => {
    const { path, body } = route.build(groupA.id);
    for (const headers of [{}, bearer("not-a-key"), bearer(a.writeKey), basic(a.writeKey)]) {
      const res = await request(t.url, route.method, path, { headers, body });
      expect(res.status).toBe(401);
      expect(res.body.error).toMatchObject({ code: "UNAUTHORIZED", requestId: expect.any(String) });
    }
  });

  it("403 when the request names another workspace", async () => {
    const { path, body } = route.build(groupA.id, b.id);
    const res = await request(t.url, route.method, path, { headers: bearer(a.adminKey), body });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe("FORBIDDEN");
    await expectBUntouched();
  });

  it.runIf(route.byId)("404 for another workspace's group id, which stays untouched", async () => {
    const { path, body } = route.build(groupB.id);
    const res = await request(t.url, route.method, path, { headers: bearer(a.adminKey), body });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("NOT_FOUND");
    await expectBUntouched();
  });
});

it("a segment cannot link another workspace's group", async () => {
  const res = await request(t.url, "PUT", "/api/admin/segments", {
    headers: bearer(a.adminKey),
    body: { workspaceId: a.id, name: "Borrowing", subscriptionGroupId: groupB.id },
  });
  expect(res.status).toBe(400);
  expect(res.body.error.issues[0].path).toBe("subscriptionGroupId");
});

it("documents every subscription-group route in /openapi.json with its error responses", async () => {
  const res = await request(t.url, "GET", "/openapi.json");
  const paths = res.body.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>;
  const expected: [string, string, string[]][] = [
    [base, "put", ["200", "400", "401", "403", "409"]],
    [base, "get", ["200", "400", "401", "403"]],
    [`${base}/{id}`, "get", ["200", "401", "403", "404"]],
    [`${base}/{id}`, "delete", ["204", "401", "403", "404", "409"]],
    [`${base}/{id}/assignments`, "put", ["200", "400", "401", "403", "404"]],
    [`${base}/{id}/assignments`, "get", ["200", "400", "401", "403", "404"]],
  ];
  for (const [path, method, statuses] of expected) {
    const op = paths[path]?.[method];
    expect(op, `${method} ${path}`).toBeDefined();
    expect(Object.keys(op!.responses)).toEqual(expect.arrayContaining(statuses));
  }
});
