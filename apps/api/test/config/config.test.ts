import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.ts";
import { createTestApp } from "../support/app.ts";
import { request } from "../support/http.ts";

describe("configuration", () => {
  it("has the documented defaults", () => {
    const c = loadConfig({});
    expect(c).toMatchObject({ port: 3000, host: "127.0.0.1", role: "all", migrateOnStart: true, databaseUrl: undefined });
    expect(c.limits).toEqual({ maxEventBytes: 32768, maxRequestBytes: 512000, maxBatchEvents: 2500, requestsPerSecond: 0 });
    expect(c.dataDir).toMatch(/\.tidings$/);
  });

  it("TIDINGS_PUBLIC_URL: the base of links, defaulting to the listen address", () => {
    expect(loadConfig({}).publicUrl).toBe("http://127.0.0.1:3000");
    expect(loadConfig({ HOST: "0.0.0.0", PORT: "8080" }).publicUrl).toBe("http://127.0.0.1:8080");
    expect(loadConfig({ TIDINGS_PUBLIC_URL: "https://mail.acme.test/tidings/" }).publicUrl).toBe("https://mail.acme.test/tidings");
    expect(() => loadConfig({ TIDINGS_PUBLIC_URL: "mail.acme.test" })).toThrow(/TIDINGS_PUBLIC_URL/);
  });

  it("TIDINGS_WEBHOOK_ALLOWED_HOSTS: hosts as URL hostnames, no ports", () => {
    expect(loadConfig({}).outboundAllowedHosts).toEqual([]);
    const hosts = " Hooks.Internal ,10.0.0.5,::1,[fd00::1], localhost., 127.1, hooks.internal";
    const expected = ["hooks.internal", "10.0.0.5", "[::1]", "[fd00::1]", "localhost.", "127.0.0.1"];
    expect(loadConfig({ TIDINGS_WEBHOOK_ALLOWED_HOSTS: hosts }).outboundAllowedHosts).toEqual(expected);
    for (const bad of ["hooks.internal:8080", "http://hooks.internal", "hooks.internal/x", "user@hooks.internal", "10.0.0.5:"]) {
      expect(() => loadConfig({ TIDINGS_WEBHOOK_ALLOWED_HOSTS: bad })).toThrow(/TIDINGS_WEBHOOK_ALLOWED_HOSTS/);
    }
  });

  it("names each invalid variable", () => {
    expect(() => loadConfig({ PORT: "http", TIDINGS_ROLE: "boss" })).toThrow(ConfigError);
    try {
      loadConfig({ PORT: "http", TIDINGS_ROLE: "boss" });
    } catch (err) {
      expect((err as Error).message).toMatch(/PORT/);
      expect((err as Error).message).toMatch(/TIDINGS_ROLE/);
    }
  });

  it("requires the root and secret keys with an external database", () => {
    expect(() => loadConfig({ DATABASE_URL: "postgres://x@h/db" })).toThrow(/TIDINGS_ROOT_KEY[\s\S]*TIDINGS_SECRET_KEY/);
    expect(() => loadConfig({ DATABASE_URL: "mysql://x@h/db" })).toThrow(/DATABASE_URL/);
    const ok = loadConfig({
      DATABASE_URL: "postgres://x@h/db",
      TIDINGS_ROOT_KEY: "r".repeat(24),
      TIDINGS_SECRET_KEY: "s".repeat(32),
    });
    expect(ok.databaseUrl).toBe("postgres://x@h/db");
  });
});

describe("TIDINGS_ROLE=worker", () => {
  it("answers probes but serves no API", async () => {
    const t = await createTestApp({ role: "worker" });
    try {
      expect((await request(t.url, "GET", "/health/ready")).status).toBe(200);
      expect((await request(t.url, "GET", "/metrics")).status).toBe(200);
      const res = await request(t.url, "POST", "/api/public/apps/track", { body: { userId: "u", event: "e" } });
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe("NOT_FOUND");
    } finally {
      await t.close();
    }
  });
});
