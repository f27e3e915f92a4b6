// Every segment route: no key and a write key get 401, another workspace's workspaceId gets 403,
// another workspace's segment id gets 404, and nothing of the other workspace changes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp, type TestWorkspace } from "../support/app.ts";
import { basic, bearer, request } from "../support/http.ts";

let t: TestApp;
let a: TestWorkspace;
let b: TestWorkspace;
let segA: Record<string, unknown> & { id: string };
let segB: Record<string, unknown> & { id: string };

beforeAll(async () => {
  t = await createTestApp();
  a = t.workspace;
  b = await t.newWorkspace();
  const put = async (ws: TestWorkspace, name: string) => {
    const res = await request(t.url, "PUT", "/api/admin/segments", { headers: bearer(ws.adminKey), body: { workspaceId: ws.id, name } });
    expect(res.status).toBe(200);
    return res.body;
  };
  segA = await put(a, "Mine");
  segB = await put(b, "Theirs");
  const added = await request(t.url, "PUT", `/api/admin/segments/${segB.id}/members`, {
    headers: bearer(b.adminKey),
    body: { add: ["b-user"] },
  });
  expect(added.status).toBe(200);
  // Membership (and with it memberCount, lastRecomputed) settles before the snapshot is taken.
  await t.ctx.segments.settle(b.id);
  segB = (await request(t.url, "GET", `/api/admin/segments/${segB.id}`, { headers: bearer(b.adminKey) })).body;
});
afterAll(async () => {
  await t.close();
});

interface Route {
  name: string;
  method: string;
  /** Path and body for a segment id and the workspace named in the request (if any). */
  build(segmentId: string, workspaceId?: string): { path: string; body?: unknown };
  byId: boolean;
}

const qs = (workspaceId?: string) => (workspaceId ? `?workspaceId=${workspaceId}` : "");
const routes: Route[] = [
  {
    name: "PUT /api/admin/segments",
    method: "PUT",
    byId: false,
    build: (_id, ws) => ({ path: "/api/admin/segments", body: { workspaceId: ws ?? a.id, name: "Intruder" } }),
  },
  { name: "GET /api/admin/segments", method: "GET", byId: false, build: (_id, ws) => ({ path: `/api/admin/segments${qs(ws)}` }) },
  { name: "GET /api/admin/segments/:id", method: "GET", byId: true, build: (id, ws) => ({ path: `/api/admin/segments/${id}${qs(ws)}` }) },
  {
    name: "DELETE /api/admin/segments/:id",
    method: "DELETE",
    byId: true,
    build: (id, ws) => ({ path: `/api/admin/segments/${id}${qs(ws)}` }),
  },
  {
    name: "PUT /api/admin/segments/:id/members",
    method: "PUT",
    byId: true,
    build: (id, ws) => ({
      path: `/api/admin/segments/${id}/members`,
      body: { ...(ws ? { workspaceId: ws } : {}), remove: ["b-user"], add: ["x"] },
    }),
  },
  {
    name: "GET /api/admin/segments/:id/users",
    method: "GET",
    byId: true,
    build: (id, ws) => ({ path: `/api/admin/segments/${id}/users${qs(ws)}` }),
  },
];

async function expectBUntouched() {
  await t.ctx.segments.settle(b.id);
  const res = await request(t.url, "GET", `/api/admin/segments/${segB.id}`, { headers: bearer(b.adminKey) });
  expect(res.status).toBe(200);
  expect(res.body).toEqual(segB);
  const users = await request(t.url, "GET", `/api/admin/segments/${segB.id}/users`, { headers: bearer(b.adminKey) });
  expect(users.body.items.map((u: { userId: string }) => u.userId)).toEqual(["b-user"]);
  const list = await request(t.url, "GET", "/api/admin/segments", { headers: bearer(b.adminKey) });
  expect(list.body.items.map((s: { name: string }) => s.name)).toEqual(["Theirs"]);
}

describe.each(routes)("$name", (route) => {
  it("401 without a key, with an unknown key, and with a write key (Bearer or Basic)", async () => {
    const { path, body } = route.build(segA.id);
    for (const headers of [{}, bearer("not-a-key"), bearer(a.writeKey), basic(a.writeKey)]) {
      const res = await request(t.url, route.method, path, { headers, body });
      expect(res.status).toBe(401);
      expect(res.body.error).toMatchObject({ code: "UNAUTHORIZED", requestId: expect.any(String) });
    }
  });

  it("403 when the request names another workspace", async () => {
    const { path, body } = route.build(segA.id, b.id);
    const res = await request(t.url, route.method, path, { headers: bearer(a.adminKey), body });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe("FORBIDDEN");
    await expectBUntouched();
  });

  it.runIf(route.byId)("404 for another workspace's segment id, which stays untouched", async () => {
    const { path, body } = route.build(segB.id);
    const res = await request(t.url, route.method, path, { headers: bearer(a.adminKey), body });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("NOT_FOUND");
    await expectBUntouched();
  });
});

it("lists only the key's own workspace", async () => {
  const res = await request(t.url, "GET", "/api/admin/segments", { headers: bearer(a.adminKey) });
  expect(res.body.items.map((s: { id: string }) => s.id)).not.toContain(segB.id);
  expect(res.body.items.map((s: { id: string }) => s.id)).toContain(segA.id);
});

it("a PUT with another workspace's segment id creates a segment in the caller's workspace only", async () => {
  const res = await request(t.url, "PUT", "/api/admin/segments", {
    headers: bearer(a.adminKey),
    body: { id: segB.id, workspaceId: a.id, name: "Same id, my workspace", definition: { entryNode: { type: "Everyone", id: "e" } } },
  });
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ id: segB.id, workspaceId: a.id, name: "Same id, my workspace" });
  await expectBUntouched();
});

it("documents every segment route in /openapi.json with its error responses", async () => {
  const res = await request(t.url, "GET", "/openapi.json");
  expect(res.status).toBe(200);
  const paths = res.body.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>;
  const expected: [string, string, string[]][] = [
    ["/api/admin/segments", "put", ["200", "400", "401", "403", "409"]],
    ["/api/admin/segments", "get", ["200", "400", "401", "403"]],
    ["/api/admin/segments/{id}", "get", ["200", "401", "403", "404"]],
    ["/api/admin/segments/{id}", "delete", ["204", "401", "403", "404", "409"]],
    ["/api/admin/segments/{id}/members", "put", ["200", "400", "401", "403", "404", "409"]],
    ["/api/admin/segments/{id}/users", "get", ["200", "400", "401", "403", "404"]],
  ];
  for (const [path, method, statuses] of expected) {
    const op = paths[path]?.[method];
    expect(op, `${method} ${path}`).toBeDefined();
    expect(Object.keys(op!.responses)).toEqual(expect.arrayContaining(statuses));
  }
});
