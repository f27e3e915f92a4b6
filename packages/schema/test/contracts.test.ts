// The route contracts are consistent on their own: unique operationIds, path parameters that match
// the params schema, the credential the path implies, and the types a client derives from them.
import { describe, expect, expectTypeOf, it } from "vitest";
import {
  type Contract,
  type ContractBody,
  type ContractParams,
  type ContractQuery,
  type ContractResponse,
  contracts,
  contractsById,
  type SegmentResource,
} from "../src/index.js";

const all = contracts as readonly Contract[];

describe("route contracts", () => {
  it("have unique operationIds of the form resource.action, each found by its id", () => {
    const ids = all.map((c) => c.operationId);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
    for (const id of ids) expect(id).toMatch(/^[a-z][A-Za-z0-9]*(\.[a-z][A-Za-z0-9]*)+$/);
    for (const c of all) expect((contractsById as Record<string, Contract>)[c.operationId]).toBe(c);
    expect(Object.keys(contractsById)).toHaveLength(all.length);
  });

  it("declare exactly the path parameters their path names", () => {
    for (const c of all) {
      const inPath = [...c.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
      expect(Object.keys(c.params?.shape ?? {}).sort(), c.operationId).toEqual(inPath);
    }
  });

  it("take the credential their path implies", () => {
    for (const c of all) {
      const expected = c.path.startsWith("/api/admin/")
        ? c.path.startsWith("/api/admin/workspaces")
          ? ["root"]
          : ["admin"]
        : c.path.startsWith("/api/public/subscriptions/")
          ? ["none"] // the unsubscribe page: the signed token is the credential
          : /^\/(api\/public|v1)\//.test(c.path)
            ? ["write"]
            : ["none"];
      expect(expected, c.operationId).toContain(c.auth);
    }
  });

  it("send no body with GET or DELETE, and no response body with 204", () => {
    for (const c of all) {
      if (c.method === "GET" || c.method === "DELETE") expect(c.body, c.operationId).toBeUndefined();
      if (c.success.status === 204) expect(c.success.schema, c.operationId).toBeUndefined();
    }
  });

  it("answer UNAVAILABLE on every operation that needs the database (503 + Retry-After while it is unreachable)", () => {
    // The metrics read NaN without it; the document is static.
    for (const c of all.filter((c) => c.operationId !== "metrics.get" && c.operationId !== "openapi.get")) {
      expect(c.errors, c.operationId).toContain("UNAVAILABLE");
    }
  });

  it("answer the admin errors on every admin operation", () => {
    for (const c of all.filter((c) => c.auth === "admin")) {
      expect(c.errors, c.operationId).toEqual(expect.arrayContaining(["VALIDATION_FAILED", "UNAUTHORIZED", "FORBIDDEN", "INTERNAL"]));
    }
  });

  it("let a client infer what it sends and receives", () => {
    const upsert = contractsById["segments.upsert"];
    expectTypeOf<ContractBody<typeof upsert>>().toHaveProperty("name");
    expectTypeOf<ContractResponse<typeof upsert>>().toEqualTypeOf<SegmentResource>();
    expectTypeOf<ContractParams<(typeof contractsById)["segments.get"]>>().toEqualTypeOf<{ id: string }>();
    expectTypeOf<ContractQuery<(typeof contractsById)["segments.list"]>>().toHaveProperty("cursor");
    expectTypeOf<ContractResponse<(typeof contractsById)["segments.delete"]>>().toEqualTypeOf<undefined>();
    expectTypeOf(upsert.operationId).toEqualTypeOf<"segments.upsert">();
    expectTypeOf(contractsById["ingest.v1.batch"].path).toEqualTypeOf<"/v1/batch">();
  });
});
