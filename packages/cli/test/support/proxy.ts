// A reverse proxy on 127.0.0.1 in front of the test server, standing for a load balancer: it
// forwards every request, except those its script answers itself (an overload, a proxy's own
// HTML page), and records what passed (method, path, status, request id, time).
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface Passed {
  /** 1-based, in arrival order. */
  n: number;
  method: string;
  path: string;
  status: number;
  /** The answer's x-request-id header. */
  requestId: string | undefined;
  at: number;
}

/** What the proxy answers itself; undefined forwards the request to the server. */
export interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

export interface ProxyServer {
  url: string;
  passed: Passed[];
  close(): Promise<void>;
  /** Stops listening and drops every connection (a server going away: connections are refused). */
  down(): Promise<void>;
  /** Listens again on the same port (the server is back). */
  up(): Promise<void>;
}

export async function startProxy(
  target: string,
  script: (req: { n: number; method: string; path: string }) => Answer | undefined,
): Promise<ProxyServer> {
  const passed: Passed[] = [];
  let count = 0;
  const server = http.createServer((req, res) => {
    const n = ++count;
    const method = req.method ?? "GET";
    const path = req.url ?? "/";
    const at = Date.now();
    const record = (status: number, requestId: string | string[] | undefined) =>
      passed.push({ n, method, path, status, requestId: typeof requestId === "string" ? requestId : undefined, at });
    const own = script({ n, method, path });
    if (own) {
      req.resume();
      record(own.status, own.headers?.["x-request-id"]);
      res.writeHead(own.status, own.headers);
      res.end(own.body ?? "");
      return;
    }
    const upstream = http.request(new URL(path, target), { method, headers: req.headers }, (answer) => {
      record(answer.statusCode ?? 0, answer.headers["x-request-id"]);
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on("error", () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return {
    url: `http://127.0.0.1:${port}`,
    passed,
    close,
    down: close,
    up: () => new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve)),
  };
}
