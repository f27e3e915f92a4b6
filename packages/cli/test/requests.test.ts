// The CLI's requests go through the SDK: a 503 is retried after its Retry-After, the API's error
// envelope is printed with its code and request id, and an answer that is not the envelope (a
// proxy's HTML page) gets a code from the API's closed list. A proxy on 127.0.0.1 stands for the
// load balancer in front of the test server.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { countEvents, newWorkspace, runCli, tempDir, type Workspace } from "./support/cli.js";
import { type ProxyServer, startProxy } from "./support/proxy.js";

/** Batch ingestion, at /api/public/apps/batch or /v1/batch. */
const isBatch = (p: string) => p.endsWith("/batch");

let ws: Workspace;
let dir: string;
let proxy: ProxyServer | undefined;

beforeAll(async () => {
  ws = await newWorkspace("requests");
  dir = tempDir("requests");
});
afterEach(async () => {
  await proxy?.close();
  proxy = undefined;
});

function ndjson(name: string, lines: object[]): string {
  const file = path.join(dir, name);
  writeFileSync(file, `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`);
  return file;
}

const tracks = (user: string, n: number) =>
  Array.from({ length: n }, (_, i) => ({ type: "track", userId: user, event: "Imported", properties: { i } }));
const ingestion = (p: ProxyServer) => p.passed.filter((r) => isBatch(r.path));

describe("requests through the SDK", () => {
  it("events import waits out a 503 for its Retry-After (an HTTP date) and stores every line once", async () => {
    const own = await newWorkspace("requests-retry");
    proxy = await startProxy(own.host, ({ n, path: p }) =>
      n === 1 && isBatch(p)
        ? {
            status: 503,
            headers: { "content-type": "application/json", "retry-after": new Date(Date.now() + 3000).toUTCString() },
            body: JSON.stringify({ error: { code: "UNAVAILABLE", message: "The server is overloaded; retry later", requestId: "lb-1" } }),
          }
        : undefined,
    );
    const file = ndjson("retried.ndjson", tracks("retried", 40));
    const res = await runCli(["events", "import", file, "--json"], { env: { ...own.env, TIDINGS_HOST: proxy.url } });
    expect(res.status, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({ records: 40, accepted: 40, rejected: 0, complete: true });
    const [first, second, ...rest] = ingestion(proxy);
    expect([first?.status, second?.status, rest.length]).toEqual([503, 204, 0]);
    // The date is whole seconds, 2 to 3 s ahead; a backoff alone would have waited well under 1 s.
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(1500);
    expect(await countEvents(own)).toEqual({ total: 40, distinct: 40 });
  });

  it("prints the API's error envelope with its code and the request id of the answer; the import stops", async () => {
    proxy = await startProxy(ws.host, () => undefined);
    const file = ndjson("refused.ndjson", tracks("refused", 3));
    const res = await runCli(["events", "import", file], {
      env: { ...ws.env, TIDINGS_HOST: proxy.url, TIDINGS_WRITE_KEY: "tdw_not-a-key" },
    });
    expect(res.status).toBe(1);
    const [answer, ...retries] = ingestion(proxy);
    expect(answer?.status).toBe(401);
    expect(retries).toEqual([]);
    expect(res.stderr).toMatch(/^error: .+ \(UNAUTHORIZED, HTTP 401\)$/m);
    expect(res.stderr).toContain(`\n  request id: ${answer!.requestId}\n`);
    expect(res.stderr).toMatch(/The import stopped before the end of the file/);
    expect(res.stderr).not.toMatch(/\n\s+at /);
  });

  it("an answer that is not the envelope gets a code from the API's list (FORBIDDEN for a 403 page), not an invented one", async () => {
    proxy = await startProxy(ws.host, ({ path: p }) =>
      isBatch(p)
        ? {
            status: 403,
            headers: { "content-type": "text/html", "x-request-id": "lb-403" },
            body: "<html><body>Blocked by policy</body></html>",
          }
        : undefined,
    );
    const file = ndjson("blocked.ndjson", tracks("blocked", 3));
    const res = await runCli(["events", "import", file], { env: { ...ws.env, TIDINGS_HOST: proxy.url } });
    expect(res.status).toBe(1);
    expect(ingestion(proxy)).toHaveLength(1);
    expect(res.stderr).toMatch(/^error: HTTP 403 \(FORBIDDEN, HTTP 403\)\n {2}request id: lb-403$/m);
    expect(res.stderr).not.toMatch(/HTTP_ERROR/);
  });

  it("events send: a non-JSON 502 is retried once, then printed as INTERNAL with the proxy's request id", async () => {
    proxy = await startProxy(ws.host, ({ path: p }) =>
      isBatch(p)
        ? { status: 502, headers: { "content-type": "text/html", "x-request-id": "lb-502" }, body: "<html>Bad Gateway</html>" }
        : undefined,
    );
    const res = await runCli(["events", "send", "--user-id", "gateway", "--event", "Tried"], {
      env: { ...ws.env, TIDINGS_HOST: proxy.url },
    });
    expect(res.status).toBe(1);
    expect(ingestion(proxy).map((r) => r.status)).toEqual([502, 502]);
    expect(res.stderr).toBe("error: HTTP 502 (INTERNAL, HTTP 502)\n  request id: lb-502\n");
  });

  it("events import reports the lines the server refuses with the server's issue, and stores the others", async () => {
    const own = await newWorkspace("requests-refused");
    const file = ndjson("server-refused.ndjson", [
      { type: "track", userId: "checked", event: "Fine" },
      { type: "track", userId: "checked", event: "Bad time", timestamp: "yesterday-ish" },
      { type: "track", userId: "checked", event: "Fine too" },
      { type: "track", userId: "checked", event: "NUL", properties: { note: "a \u0000 inside" } },
      { type: "identify", userId: "checked", traits: { plan: "pro" } },
    ]);
    const res = await runCli(["events", "import", file], { env: own.env });
    expect(res.status).toBe(1);
    expect(res.stdout).toMatch(/: 5 records, 3 accepted, 2 rejected/);
    expect(res.stdout).toMatch(/^ {2}line 2: timestamp: /m);
    expect(res.stdout).toMatch(/^ {2}line 4: properties\.note: contains a NUL character$/m);
    expect(res.stderr).toMatch(/^error: 2 lines rejected$/m);
    expect(await countEvents(own)).toEqual({ total: 3, distinct: 3 });
  });

  it("a name that matches nothing is NOT_FOUND without an HTTP status the server never sent", async () => {
    const res = await runCli(["segments", "get", "No such segment"], { env: ws.env });
    expect(res.status).toBe(1);
    expect(res.stderr).toBe('error: no segment named "No such segment" (NOT_FOUND)\n');
  });
});
