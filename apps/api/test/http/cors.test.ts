// CORS as browsers see it: preflights and response headers on the public ingestion routes (any
// origin, or TIDINGS_CORS_ORIGINS) and on the admin API (closed unless TIDINGS_ADMIN_CORS_ORIGINS).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { basic, bearer, request } from "../support/http.ts";

const SHOP = "https://shop.example";
const BACKOFFICE = "https://backoffice.example";
const STRANGER = "https://stranger.example";

let open: TestApp;
let restricted: TestApp;
beforeAll(async () => {
  open = await createTestApp();
  restricted = await createTestApp({
    corsOrigins: [SHOP],
    adminCorsOrigins: [BACKOFFICE],
    limits: { ...loadConfig({}).limits, requestsPerSecond: 2 },
  });
});
afterAll(async () => {
  await open?.close();
  await restricted?.close();
});

/** What a browser sends before a POST with an Authorization header. */
function preflight(
  t: TestApp,
  path: string,
  origin: string,
  method = "POST",
  headers = "authorization,content-type,publicwritekey,content-encoding",
) {
  return request(t.url, "OPTIONS", path, {
    headers: { origin, "access-control-request-method": method, "access-control-request-headers": headers },
  });
}

const list = (value: string | null) =>
  (value ?? "")
    .split(",")
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);

describe("CORS on public ingestion", () => {
  it.each(["/v1/track", "/api/public/apps/batch", "/v1/batch", "/api/public/apps/identify"])(
    "approves a preflight to %s from any origin, with the headers SDKs send",
    async (path) => {
      const res = await preflight(open, path, STRANGER);
      expect(res.status).toBe(204);
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
      expect(list(res.headers.get("access-control-allow-methods"))).toContain("post");
      expect(list(res.headers.get("access-control-allow-headers"))).toEqual(
        expect.arrayContaining(["authorization", "content-type", "publicwritekey", "content-encoding"]),
      );
    },
  );

  it("lets the page read the response, its request id and errors", async () => {
    const ok = await request(open.url, "POST", "/v1/track", {
      headers: { ...basic(open.workspace.writeKey), origin: STRANGER },
      body: { userId: "u-cors", event: "Clicked" },
    });
    expect(ok.status).toBe(204);
    expect(ok.headers.get("access-control-allow-origin")).toBe("*");
    expect(list(ok.headers.get("access-control-expose-headers"))).toEqual(expect.arrayContaining(["x-request-id", "retry-after"]));

    // A refused key is still readable by the page, so it can report why.
    const refused = await request(open.url, "POST", "/api/public/apps/track", {
      headers: { origin: STRANGER },
      body: { userId: "u", event: "e" },
    });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("access-control-allow-origin")).toBe("*");
  });

  it("with TIDINGS_CORS_ORIGINS approves only the listed origins", async () => {
    const stranger = await preflight(restricted, "/v1/track", STRANGER);
    expect(stranger.headers.get("access-control-allow-origin")).toBeNull();

    for (const path of ["/v1/track", "/api/public/apps/batch"]) {
      const shop = await preflight(restricted, path, SHOP);
      expect(shop.status).toBe(204);
      expect(shop.headers.get("access-control-allow-origin")).toBe(SHOP);
      expect(list(shop.headers.get("vary"))).toContain("origin");
    }
    // The admin origin opens the admin API, not ingestion.
    expect((await preflight(restricted, "/v1/track", BACKOFFICE)).headers.get("access-control-allow-origin")).toBeNull();
  });

  it("exposes Retry-After on a 429, whichever prefix spent the budget", async () => {
    const send = (path: string, i: number) =>
      request(restricted.url, "POST", path, {
        headers: { ...basic(restricted.workspace.writeKey), origin: SHOP },
        body: { userId: "u", event: "e", messageId: `cors-rl-${i}` },
      });
    const statuses = [await send("/v1/track", 0), await send("/api/public/apps/track", 1), await send("/v1/track", 2)];
    expect(statuses.map((r) => r.status)).toEqual([204, 204, 429]);
    const limited = statuses[2]!;
    expect(limited.headers.get("access-control-allow-origin")).toBe(SHOP);
    expect(limited.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(list(limited.headers.get("access-control-expose-headers"))).toContain("retry-after");
  });
});

describe("CORS on the admin API", () => {
  it("is closed to browsers by default", async () => {
    const pre = await preflight(open, "/api/admin/segments", STRANGER, "GET", "authorization");
    expect(pre.status).not.toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBeNull();

    const res = await request(open.url, "GET", "/api/admin/segments", {
      headers: { ...bearer(open.workspace.adminKey), origin: STRANGER },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("opens to the origins in TIDINGS_ADMIN_CORS_ORIGINS only", async () => {
    const pre = await preflight(restricted, "/api/admin/segments", BACKOFFICE, "PUT", "authorization,content-type");
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe(BACKOFFICE);
    expect(list(pre.headers.get("access-control-allow-methods"))).toEqual(expect.arrayContaining(["get", "put", "delete"]));
    expect(list(pre.headers.get("access-control-allow-headers"))).toEqual(expect.arrayContaining(["authorization", "content-type"]));

    const res = await request(restricted.url, "GET", "/api/admin/segments", {
      headers: { ...bearer(restricted.workspace.adminKey), origin: BACKOFFICE },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe(BACKOFFICE);

    for (const origin of [STRANGER, SHOP]) {
      expect((await preflight(restricted, "/api/admin/segments", origin, "GET")).headers.get("access-control-allow-origin")).toBeNull();
    }
    // Nothing outside /api/admin/ is opened by it.
    const health = await preflight(restricted, "/health/live", BACKOFFICE, "GET");
    expect(health.status).toBe(404);
    expect(health.headers.get("access-control-allow-origin")).toBeNull();
  });
});

describe("CORS configuration", () => {
  it("parses and normalises origin lists", () => {
    expect(loadConfig({})).toMatchObject({ corsOrigins: "*", adminCorsOrigins: [] });
    const c = loadConfig({
      TIDINGS_CORS_ORIGINS: "https://Shop.example, http://localhost:8080/",
      TIDINGS_ADMIN_CORS_ORIGINS: "https://admin.example:443",
    });
    expect(c.corsOrigins).toEqual(["https://shop.example", "http://localhost:8080"]);
    expect(c.adminCorsOrigins).toEqual(["https://admin.example"]);
  });

  it.each([
    ["TIDINGS_CORS_ORIGINS", "shop.example"],
    ["TIDINGS_CORS_ORIGINS", "https://shop.example/checkout"],
    ["TIDINGS_CORS_ORIGINS", " , "],
    ["TIDINGS_ADMIN_CORS_ORIGINS", "*"],
    ["TIDINGS_ADMIN_CORS_ORIGINS", "https://ok.example,ftp://files.example"],
  ])("refuses %s=%j, naming the variable", (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`${name}:`));
  });
});
