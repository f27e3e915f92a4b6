// Segment definitions over HTTP: the interface-spec example, every node type and operator, and the
// structural checks (unknown types, duplicate ids, dangling references, cycles) with issue paths.
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

const put = (body: Record<string, unknown>) =>
  request(t.url, "PUT", "/api/admin/segments", {
    headers: bearer(t.workspace.adminKey),
    body: { workspaceId: t.workspace.id, ...body },
  });

let n = 0;
const putDefinition = (definition: unknown) => put({ name: `def-${n++}`, definition });

const issuePaths = (res: { body: { error?: { issues?: { path: string }[] } } }) => (res.body.error?.issues ?? []).map((i) => i.path);

describe("PUT /api/admin/segments definitions", () => {
  it("accepts the interface-spec example and answers with every response field", async () => {
    const entryNode = { type: "Trait", id: "1", path: "lastActive", operator: { type: "Within", windowSeconds: 3600 } };
    const before = Date.now();
    const res = await put({ name: "Recently active", definition: { entryNode, nodes: [entryNode] } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/application\/json/);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      workspaceId: t.workspace.id,
      name: "Recently active",
      definition: { entryNode, nodes: [entryNode] },
      updatedAt: expect.any(Number),
      createdAt: expect.any(Number),
      definitionUpdatedAt: expect.any(Number),
      memberCount: 0,
    });
    // Milliseconds since the epoch, set by this request.
    expect(res.body.createdAt).toBeGreaterThanOrEqual(before - 1000);
    expect(res.body.createdAt).toBeLessThanOrEqual(Date.now() + 1000);
    expect(res.body.definitionUpdatedAt).toBe(res.body.createdAt);
  });

  it("accepts a definition without nodes and answers with an empty list", async () => {
    const entryNode = { type: "Trait", id: "t", path: "plan", operator: { type: "Exists" } };
    const res = await putDefinition({ entryNode });
    expect(res.status).toBe(200);
    expect(res.body.definition).toEqual({ entryNode, nodes: [] });
  });

  it("accepts every node type and operator and stores them as sent", async () => {
    const sg = await request(t.url, "PUT", "/api/admin/subscription-groups", {
      headers: bearer(t.workspace.adminKey),
      body: { workspaceId: t.workspace.id, name: "Newsletter", channel: "Email", type: "OptOut" },
    });
    expect(sg.status).toBe(200);
    const operators = [
      { type: "Equals", value: "pro" },
      { type: "Equals", value: true },
      { type: "NotEquals", value: 3 },
      { type: "Exists" },
      { type: "NotExists" },
      { type: "GreaterThanOrEqual", value: 18 },
      { type: "LessThan", value: 2.5 },
      { type: "Within", windowSeconds: 86400 },
      { type: "HasBeen", comparator: "GTE", value: "trial", windowSeconds: 604800 },
      { type: "HasBeen", comparator: "LT", value: 1, windowSeconds: 60 },
      { type: "AbsoluteTimestamp", absoluteTimestamp: 1_700_000_000_000, direction: "after" },
      { type: "AbsoluteTimestamp", absoluteTimestamp: 1_700_000_000_000, direction: "before" },
    ];
    const traitNodes = operators.map((operator, i) => ({ type: "Trait", id: `trait-${i}`, path: "a.b", operator }));
    const nodes = [
      ...traitNodes,
      {
        type: "Performed",
        id: "performed",
        event: "Order Completed",
        times: 2,
        timesOperator: "=",
        withinSeconds: 3600,
        properties: [
          { path: "total", operator: { type: "GreaterThanOrEqual", value: 100 } },
          { path: "coupon", operator: { type: "NotExists" } },
        ],
      },
      { type: "Performed", id: "performed-defaults", event: "Signed Up" },
      {
        type: "LastPerformed",
        id: "last",
        event: "Plan Changed",
        whereProperties: [{ path: "source", operator: { type: "Equals", value: "web" } }],
        hasProperties: [{ path: "plan", operator: { type: "NotEquals", value: "free" } }],
      },
      { type: "Or", id: "or", children: ["everyone", "sub"] },
      { type: "Not", id: "not", child: "bucket" },
      { type: "Everyone", id: "everyone" },
      { type: "SubscriptionGroup", id: "sub", subscriptionGroupId: sg.body.id },
      { type: "RandomBucket", id: "bucket", percent: 0.25 },
      { type: "Manual", id: "manual" },
    ];
    const entryNode = {
      type: "And",
      id: "root",
      children: nodes.map((x) => x.id).filter((id) => id !== "everyone" && id !== "sub" && id !== "bucket"),
    };
    const res = await putDefinition({ entryNode, nodes });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const withDefaults = nodes.map((x) => (x.id === "performed-defaults" ? { ...x, times: 1, timesOperator: ">=" } : x));
    expect(res.body.definition).toEqual({ entryNode, nodes: withDefaults });
    const got = await request(t.url, "GET", `/api/admin/segments/${res.body.id}`, { headers: bearer(t.workspace.adminKey) });
    expect(got.body.definition).toEqual({ entryNode, nodes: withDefaults });
  });

  it("rejects an unknown node type with the path of its type", async () => {
    const res = await putDefinition({
      entryNode: { type: "Everyone", id: "e" },
      nodes: [
        { type: "Everyone", id: "x" },
        { type: "Teleport", id: "y" },
      ],
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("VALIDATION_FAILED");
    expect(issuePaths(res)).toEqual(["definition.nodes.1.type"]);
  });

  it("rejects an unknown operator with the path of the operator type", async () => {
    const res = await putDefinition({
      entryNode: { type: "Trait", id: "t", path: "age", operator: { type: "Between", low: 1, high: 2 } },
    });
    expect(res.status).toBe(400);
    expect(issuePaths(res)).toEqual(["definition.entryNode.operator.type"]);
  });

  it("rejects HasBeen on event properties, where no value history exists", async () => {
    const res = await putDefinition({
      entryNode: {
        type: "Performed",
        id: "p",
        event: "x",
        properties: [{ path: "a", operator: { type: "HasBeen", comparator: "GTE", value: 1, windowSeconds: 5 } }],
      },
    });
    expect(res.status).toBe(400);
    expect(issuePaths(res)).toEqual(["definition.entryNode.properties.0.operator.type"]);
  });

  it("refuses a misspelt field instead of dropping it: `within_seconds` is not saved as 'ever performed'", async () => {
    const name = "Bought this week";
    const res = await put({
      name,
      definition: {
        entryNode: { type: "And", id: "root", children: ["p"] },
        nodes: [
          { type: "Everyone", id: "e" },
          { type: "Performed", id: "p", event: "Order Completed", within_seconds: 604800 },
        ],
      },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("VALIDATION_FAILED");
    expect(res.body.error.issues).toEqual([
      { path: "definition.nodes.1.within_seconds", message: 'unknown field "within_seconds" (did you mean "withinSeconds"?)' },
    ]);
    const list = await request(t.url, "GET", "/api/admin/segments?limit=500", { headers: bearer(t.workspace.adminKey) });
    expect(list.body.items.map((s: { name: string }) => s.name)).not.toContain(name);
  });

  it("refuses unknown fields at every depth, one issue per field", async () => {
    const res = await putDefinition({
      entryNode: {
        type: "Performed",
        id: "p",
        event: "e",
        properties: [{ path: "a", operator: { type: "Equals", value: 1, caseInsensitive: true }, negate: true }],
      },
      nodes: [{ type: "Trait", id: "t", path: "plan", operator: { type: "Exists" }, optional: true, weight: 2 }],
      exitNode: {},
    });
    expect(res.status).toBe(400);
    expect(issuePaths(res).sort()).toEqual([
      "definition.entryNode.properties.0.negate",
      "definition.entryNode.properties.0.operator.caseInsensitive",
      "definition.exitNode",
      "definition.nodes.0.optional",
      "definition.nodes.0.weight",
    ]);
  });

  it("rejects malformed node fields with their paths", async () => {
    const res = await putDefinition({
      entryNode: { type: "Or", id: "o", children: ["r", "w"] },
      nodes: [
        { type: "RandomBucket", id: "r", percent: 1.5 },
        { type: "Trait", id: "w", path: "x", operator: { type: "Within", windowSeconds: -1 } },
        { type: "Performed", id: "p", event: "e", timesOperator: "!=" },
      ],
    });
    expect(res.status).toBe(400);
    expect(issuePaths(res).sort()).toEqual([
      "definition.nodes.0.percent",
      "definition.nodes.1.operator.windowSeconds",
      "definition.nodes.2.timesOperator",
    ]);
  });

  it("rejects duplicate node ids, naming the repeated one", async () => {
    const res = await putDefinition({
      entryNode: { type: "Or", id: "root", children: ["a"] },
      nodes: [
        { type: "Everyone", id: "a" },
        { type: "Manual", id: "a" },
      ],
    });
    expect(res.status).toBe(400);
    expect(issuePaths(res)).toEqual(["definition.nodes.1.id"]);
    expect(res.body.error.issues[0].message).toMatch(/duplicate node id "a"/);
  });

  it("rejects a node reusing the entry node's id with different content", async () => {
    const res = await putDefinition({
      entryNode: { type: "Everyone", id: "root" },
      nodes: [{ type: "Manual", id: "root" }],
    });
    expect(res.status).toBe(400);
    expect(issuePaths(res)).toEqual(["definition.nodes.0.id"]);
  });

  it("rejects references to unknown ids from And/Or children and Not child", async () => {
    const res = await putDefinition({
      entryNode: { type: "And", id: "root", children: ["a", "ghost"] },
      nodes: [
        { type: "Everyone", id: "a" },
        { type: "Or", id: "or", children: ["a", "b", "missing"] },
        { type: "Not", id: "b", child: "nowhere" },
      ],
    });
    expect(res.status).toBe(400);
    expect(issuePaths(res).sort()).toEqual([
      "definition.entryNode.children.1",
      "definition.nodes.1.children.2",
      "definition.nodes.2.child",
    ]);
    expect(res.body.error.issues.find((i: { path: string }) => i.path === "definition.nodes.2.child").message).toMatch(
      /unknown node id "nowhere"/,
    );
  });

  it("rejects cycles, naming the reference that closes them", async () => {
    const res = await putDefinition({
      entryNode: { type: "And", id: "root", children: ["a"] },
      nodes: [
        { type: "Or", id: "a", children: ["e", "b"] },
        { type: "Everyone", id: "e" },
        { type: "Not", id: "b", child: "a" },
      ],
    });
    expect(res.status).toBe(400);
    expect(issuePaths(res)).toEqual(["definition.nodes.2.child"]);
    expect(res.body.error.issues[0].message).toMatch(/cycle/);

    const self = await putDefinition({ entryNode: { type: "Not", id: "self", child: "self" } });
    expect(self.status).toBe(400);
    expect(issuePaths(self)).toEqual(["definition.entryNode.child"]);
  });

  it("accepts a shared child (a diamond is not a cycle)", async () => {
    const res = await putDefinition({
      entryNode: { type: "And", id: "root", children: ["l", "r"] },
      nodes: [
        { type: "Or", id: "l", children: ["leaf"] },
        { type: "Not", id: "r", child: "leaf" },
        { type: "Everyone", id: "leaf" },
      ],
    });
    expect(res.status).toBe(200);
  });

  it("rejects a SubscriptionGroup node or subscriptionGroupId naming no group of the workspace", async () => {
    const other = await t.newWorkspace();
    const foreign = await request(t.url, "PUT", "/api/admin/subscription-groups", {
      headers: bearer(other.adminKey),
      body: { workspaceId: other.id, name: "Theirs", channel: "Sms", type: "OptIn" },
    });
    expect(foreign.status).toBe(200);
    const res = await put({
      name: "bad-groups",
      subscriptionGroupId: foreign.body.id,
      definition: { entryNode: { type: "SubscriptionGroup", id: "s", subscriptionGroupId: crypto.randomUUID() } },
    });
    expect(res.status).toBe(400);
    expect(issuePaths(res).sort()).toEqual(["definition.entryNode.subscriptionGroupId", "subscriptionGroupId"]);
    const list = await request(t.url, "GET", "/api/admin/segments?limit=500", { headers: bearer(t.workspace.adminKey) });
    expect(list.body.items.map((s: { name: string }) => s.name)).not.toContain("bad-groups");
  });
});
