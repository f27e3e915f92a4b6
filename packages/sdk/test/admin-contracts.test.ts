// The admin client has a method for every admin and root operation of the route contracts, and
// each method reaches its own route on the real server (method, path, parameters, key kind).
import { randomUUID } from "node:crypto";
import { contracts } from "@tidings/schema";
import { beforeAll, describe, expect, expectTypeOf, it } from "vitest";
import { type AdminOperationId, isTidingsApiError, Paginated, TidingsAdmin } from "../src/index.js";
import { newWorkspace, server, type Workspace } from "./support/env.js";

const adminContracts = contracts.filter((c) => c.auth === "admin" || c.auth === "root");

/** The value at a dotted path of an object (functions may hold nested methods). */
const at = (root: unknown, path: string) =>
  path.split(".").reduce<unknown>((node, key) => (node == null ? undefined : (node as Record<string, unknown>)[key]), root);

// Compile time: a dotted operationId that does not lead to a method on the client's type.
type MethodAt<T, P extends string> = P extends `${infer H}.${infer R}`
  ? H extends keyof T
    ? MethodAt<T[H], R>
    : false
  : P extends keyof T
    ? T[P] extends (...args: never[]) => unknown
      ? true
      : false
    : false;
type Missing = { [Id in AdminOperationId]: MethodAt<TidingsAdmin, Id> extends true ? never : Id }[AdminOperationId];

let ws: Workspace;
beforeAll(async () => {
  ws = await newWorkspace();
});

describe("one method per operation", () => {
  it("covers the admin and root operations of the contracts, and only those", () => {
    expectTypeOf<Missing>().toEqualTypeOf<never>();
    const admin = new TidingsAdmin({ apiKey: "k", host: "http://127.0.0.1:9" });
    expect(adminContracts.length).toBeGreaterThan(30);
    for (const c of adminContracts) expect(typeof at(admin, c.operationId), c.operationId).toBe("function");
    for (const c of contracts.filter((x) => x.auth === "write" || x.auth === "none")) {
      expect(at(admin, c.operationId), `${c.operationId} is not an admin operation`).toBeUndefined();
    }
    expect(typeof admin.broadcasts.wait).toBe("function");
  });

  it("returns an async-iterable paginator from exactly the operations answering a page", () => {
    const admin = new TidingsAdmin({ apiKey: "k", host: "http://127.0.0.1:9" });
    const lists = adminContracts.filter((c) => c.operationId.endsWith(".list")).map((c) => c.operationId);
    expect(lists).toContain("segments.list");
    expect(lists).toContain("segments.users.list");
    for (const c of adminContracts) {
      const fn = at(admin, c.operationId) as (...args: unknown[]) => unknown;
      const args = [...c.path.matchAll(/\{\w+\}/g)].map(() => "x");
      const result = fn(...args);
      if (lists.includes(c.operationId)) expect(result, c.operationId).toBeInstanceOf(Paginated);
      else {
        expect(result, c.operationId).toBeInstanceOf(Promise);
        (result as Promise<unknown>).catch(() => {});
      }
    }
  });

  it("each method reaches its own route on the server with the right key kind", async () => {
    const { url, rootKey } = server();
    const asAdmin = ws.admin;
    const asRoot = new TidingsAdmin({ apiKey: rootKey, host: url });
    const reached: string[] = [];
    for (const c of adminContracts) {
      const client = c.auth === "root" ? asRoot : asAdmin;
      const fn = at(client, c.operationId) as (...args: unknown[]) => unknown;
      const params = [...c.path.matchAll(/\{\w+\}/g)].map(() => randomUUID());
      // A body the server refuses (400) for the operations taking one; no side effects.
      const args = "body" in c && c.body ? [...params, { notAField: true }] : params;
      const result = fn(...args);
      let status: number;
      let message = "";
      try {
        await (result instanceof Paginated ? result.page() : result);
        status = 200;
      } catch (err) {
        if (!isTidingsApiError(err)) throw err;
        status = err.status;
        message = err.message;
        expect(err.requestId, c.operationId).toMatch(/^[0-9a-f-]{36}$/);
      }
      // Not a route the server lacks (its 404 says "Route … not found"), not the wrong key kind.
      const what = `${c.operationId}: ${status} ${message}`;
      expect(message, what).not.toMatch(/^Route /);
      expect([200, 400, 404], what).toContain(status);
      reached.push(c.operationId);
    }
    expect(reached).toHaveLength(adminContracts.length);
  });
});
