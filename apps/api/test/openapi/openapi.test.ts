// Every route the server registers comes from a contract of @tidings/schema and every contract is
// served; /openapi.json is a valid OpenAPI 3.1 document generated from the contracts, documenting
// every error code; /docs renders it from local assets only.
import { Validator } from "@seriousme/openapi-schema-validator";
import { type Contract, contracts, ErrorCode, errorDescriptions, errorStatus } from "@tidings/schema";
import type { onRouteHookHandler } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app/http.ts";
import type { System as AppContext } from "../../src/app/system.ts";
import { CONSOLE_PATH } from "../../src/http/console.ts";
import { DOCS_PREFIX } from "../../src/http/openapi.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { request } from "../support/http.ts";

type Doc = {
  openapi: string;
  info: { description: string; version: string };
  paths: Record<string, Record<string, { operationId: string; responses: Record<string, { description: string; content?: unknown }> }>>;
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

const keyOf = (method: string, path: string) => `${method} ${path}`;

/**
 * Every route of an app built from `ctx`, as Fastify registers it (its onRoute hook), keyed
 * `METHOD /path/{param}`, with the contract it was registered from. Left out: HEAD (Fastify adds
 * one per GET), OPTIONS (CORS preflights), the routes of the docs UI plugin (its page, static
 * files and its copy of the document) and the web console's page and files (/console).
 */
async function registeredRoutes(ctx: AppContext): Promise<{ key: string; contract?: Contract }[]> {
  const routes: Parameters<onRouteHookHandler>[0][] = [];
  const app = await buildApp(ctx, {
    onRoute: (route) => {
      routes.push(route);
    },
  });
  await app.ready();
  await app.close();
  return routes
    .filter((route) => route.prefix !== DOCS_PREFIX && !route.url.startsWith(CONSOLE_PATH))
    .flatMap((route) =>
      [route.method]
        .flat()
        .filter((method) => method !== "HEAD" && method !== "OPTIONS")
        .map((method) => ({ key: keyOf(method, route.url.replace(/:(\w+)/g, "{$1}")), contract: route.config?.contract })),
    );
}

describe("routes and contracts", () => {
  it("register one route per contract, each from its contract, and no route without one", async () => {
    // Every optional plugin on: the admin API's CORS and the ingestion rate limit add routes or hooks.
    const config = t.ctx.config;
    const routes = await registeredRoutes({
      ...t.ctx,
      config: { ...config, adminCorsOrigins: ["https://admin.example"], limits: { ...config.limits, requestsPerSecond: 100 } },
    });
    // Routes we know exist are seen, or the comparison below could pass on an empty list.
    expect(routes.map((r) => r.key)).toEqual(
      expect.arrayContaining(["PUT /api/admin/journeys", "GET /api/admin/journeys/{id}", "POST /v1/batch", "GET /metrics"]),
    );

    const byKey = new Map((contracts as readonly Contract[]).map((c) => [keyOf(c.method, c.path), c]));
    const withoutContract = routes.filter((r) => r.contract === undefined || byKey.get(r.key) !== r.contract).map((r) => r.key);
    const served = new Set(routes.map((r) => r.key));
    const withoutRoute = [...byKey.keys()].filter((key) => !served.has(key));
    expect({ withoutContract, withoutRoute }).toEqual({ withoutContract: [], withoutRoute: [] });
    expect(routes).toHaveLength(contracts.length);
  });

  it("give every contract a unique operationId", () => {
    const ids = contracts.map((c) => c.operationId);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
  });
});

describe("GET /openapi.json", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc) as Record<string, unknown>);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
  });

  it("carries the version of @tidings/schema", async () => {
    const { version } = (await import("@tidings/schema/package.json", { with: { type: "json" } })).default;
    expect(doc.info.version).toBe(version);
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

  it("lists every contract but the hidden ones, each under its unique operationId", () => {
    const operationIds = Object.values(doc.paths).flatMap((ops) => Object.values(ops).map((op) => op.operationId));
    expect(new Set(operationIds).size).toBe(operationIds.length);
    expect([...operationIds].sort()).toEqual(
      contracts
        .filter((c) => !(c as Contract).hidden)
        .map((c) => c.operationId)
        .sort(),
    );
    for (const c of contracts as readonly Contract[]) {
      if (c.hidden) continue;
      expect(doc.paths[c.path]?.[c.method.toLowerCase()]?.operationId, c.operationId).toBe(c.operationId);
    }
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
