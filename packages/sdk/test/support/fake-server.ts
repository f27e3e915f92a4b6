// A node:http server on 127.0.0.1 that records every request (gzip bodies decoded) and answers
// what the test scripts: failures on purpose, delays, dropped connections.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";

export interface Recorded {
  n: number;
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  /** Bytes on the wire (compressed when gzip). */
  wireBytes: number;
  /** The body as text (decoded). */
  text: string;
  /** The body parsed as JSON, when it is. */
  json: any;
  at: number;
}

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
  delayMs?: number;
  /** Drop the connection without answering. */
  destroy?: boolean;
}

export interface FakeServer {
  url: string;
  requests: Recorded[];
  /** Resolves once `n` requests have been recorded. */
  waitFor(n: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function fakeServer(reply: (req: Recorded) => Reply | Promise<Reply> = () => ({ status: 204 })): Promise<FakeServer> {
  const requests: Recorded[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const raw = Buffer.concat(chunks);
      const decoded = req.headers["content-encoding"] === "gzip" ? gunzipSync(raw) : raw;
      const text = decoded.toString("utf8");
      let json: unknown;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      const rec: Recorded = {
        n: requests.length + 1,
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        wireBytes: raw.length,
        text,
        json,
        at: Date.now(),
      };
      requests.push(rec);
      for (const w of waiters.filter((w) => requests.length >= w.n)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
      const r = await reply(rec);
      if (r.delayMs) await new Promise((resolve) => setTimeout(resolve, r.delayMs));
      if (r.destroy) {
        req.socket.destroy();
        return;
      }
      const body = r.body === undefined ? "" : typeof r.body === "string" ? r.body : JSON.stringify(r.body);
      res.writeHead(r.status, { ...(body ? { "content-type": "application/json" } : {}), ...r.headers });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    waitFor(n, timeoutMs = 10_000) {
      if (requests.length >= n) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`expected ${n} requests, got ${requests.length}`)), timeoutMs);
        waiters.push({
          n,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
        });
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The error envelope the real server answers with. */
export const envelope = (code: string, message: string, issues?: { path: string; message: string }[]) => ({
  error: { code, message, requestId: "req-fake", ...(issues ? { issues } : {}) },
});
