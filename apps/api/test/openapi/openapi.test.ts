// /openapi.json is a valid OpenAPI 3.1 document that documents every error code and every route
// the server registers; /docs renders it from local assets only.
import { Validator } from "@seriousme/openapi-schema-validator";
import { ErrorCode, errorDescriptions, errorStatus } from "@tidings/schema";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/http/app.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { request } from "../support/http.ts";

type Doc = {
  openapi: string;
  info: { description: string };
  paths: Record<string, Record<string, { responses: Record<string, { description: string; content?: unknown }> }>>;
};

let t: TestApp;
let doc: Doc;
beforeAll(async () => {
  t = await createTestApp();
  const res = await request<Doc>(t.url, "GET", "/openapi.json");
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("application/json");
  doc = res.body;
});
afterAll(async () => {
  await t.close();
});

/**
 * Method + path of every route of a Fastify app, read from `printRoutes()`: each tree line adds
 * its segment to its parent's; a line ending in `(GET, HEAD)` is a route.
 */
function registeredRoutes(app: FastifyInstance): string[] {
  const stack: string[] = [];
  const routes: string[] = [];
  for (const line of app.printRoutes().split("\n")) {
    const m = line.match(/^((?:│ {3}| {4})*)(?:├── |└── )(\S+)(?: \(([A-Z, ]+)\))?$/);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    stack.length = depth;
    stack.push(m[2]!);
    for (const method of m[3]?.split(", ") ?? []) routes.push(`${method} ${stack.join("")}`);
  }
  return routes;
}

describe("GET /openapi.json", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc) as Record<string, unknown>);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
  });

  it("documents every error code with its status and meaning", () => {
    for (const code of ErrorCode.options) {
      expect(doc.info.description, code).toContain(`\`${code}\` (${errorStatus[code]}): ${errorDescriptions[code]}`);
    }
    const used = new Set<string>();
    for (const ops of Object.values(doc.paths)) {
      for (const op of Object.values(ops)) {
        for (const r of Object.values(op.responses)) for (const m of r.description.matchAll(/\b([A-Z_]{5,}):/g)) used.add(m[1]!);
      }
    }
    // Every code is answered by some route, and no route names a code outside the list.
    expect([...used].sort()).toEqual([...ErrorCode.options].sort());
  });

  it("documents every route the server registers under /api and /v1, and nothing more", async () => {
    const app = await buildApp(t.ctx);
    await app.ready();
    const registered = registeredRoutes(app)
      // HEAD routes are Fastify's automatic ones, OPTIONS the CORS preflights: not operations.
      .filter((r) => !/^(HEAD|OPTIONS) /.test(r) && / \/(api|v1)\//.test(r))
      .map((r) => r.replace(/:(\w+)/g, "{$1}"));
    await app.close();
    // The parser must see routes we know exist, or this test would pass on an empty list.
    expect(registered).toEqual(expect.arrayContaining(["PUT /api/admin/journeys", "GET /api/admin/journeys/{id}", "POST /v1/batch"]));

    const documented = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    const undocumented = registered.filter((r) => !documented.includes(r));
    const unserved = documented.filter((d) => / \/(api|v1)\//.test(d) && !registered.includes(d));
    expect({ undocumented, unserved }).toEqual({ undocumented: [], unserved: [] });
  });

  it("gives every /api and /v1 operation its error responses in the envelope", () => {
    const missing: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths)) {
      if (!/^\/(api|v1)\//.test(path)) continue;
      for (const [method, op] of Object.entries(ops)) {
        const errors = Object.entries(op.responses).filter(([status]) => Number(status) >= 400);
        const enveloped = errors.every(([, r]) => JSON.stringify(r.content ?? {}).includes("#/components/schemas/ErrorResponse"));
        if (!op.responses["400"] || !op.responses["500"] || !enveloped) missing.push(`${method.toUpperCase()} ${path}`);
      }
    }
    expect(missing).toEqual([]);
  });
});

describe("GET /docs", () => {
  it("serves an API reference page whose assets all come from this server", async () => {
    const page = await request(t.url, "GET", "/docs");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(page.text).toContain("<title>Tidings API reference</title>");
    expect(page.text).not.toMatch(/(src|href)="(https?:)?\/\//);
    const assets = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(assets).toEqual(expect.arrayContaining(["/docs/static/swagger-ui-bundle.js", "/docs/static/swagger-initializer.js"]));
    for (const asset of assets) {
      const res = await fetch(new URL(asset, `${t.url}/docs`));
      expect(res.status, asset).toBe(200);
      await res.arrayBuffer();
    }
  });

  it("renders the same document as /openapi.json", async () => {
    const init = await request(t.url, "GET", "/docs/static/swagger-initializer.js");
    expect(init.text).toContain("resolveUrl('./json')");
    expect(init.text).toContain("validatorUrl: null");
    const spec = await request(t.url, "GET", "/docs/json");
    expect(spec.status).toBe(200);
    expect(spec.body).toEqual(doc);
  });
});
