// TIDINGS_INGEST_RATE_LIMIT: requests per second per workspace (and process) on the public routes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { basic, request } from "../support/http.ts";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ limits: { ...loadConfig({}).limits, requestsPerSecond: 3 } });
});
afterAll(async () => {
  await t.close();
});

const track = (key: string, i: number) =>
  request(t.url, "POST", "/v1/track", { headers: basic(key), body: { userId: "u", event: "e", messageId: `rl-${key.slice(-6)}-${i}` } });

describe("ingestion rate limit", () => {
  it("answers 429 with Retry-After and the envelope past the limit, per workspace", async () => {
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push(await track(t.workspace.writeKey, i));
    expect(statuses.slice(0, 3).map((r) => r.status)).toEqual([204, 204, 204]);
    const limited = statuses[3]!;
    expect(limited.status).toBe(429);
    expect(limited.body.error).toMatchObject({ code: "RATE_LIMITED", requestId: expect.any(String) });
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);

    // Another workspace has its own budget.
    const other = await t.newWorkspace();
    expect((await track(other.writeKey, 0)).status).toBe(204);
  });

  it("checks the key before counting: an unknown key is 401, not 429", async () => {
    const res = await request(t.url, "POST", "/v1/track", { headers: basic(`tdw_${"x".repeat(43)}`), body: { userId: "u", event: "e" } });
    expect(res.status).toBe(401);
  });
});
