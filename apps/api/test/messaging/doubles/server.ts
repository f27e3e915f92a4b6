// Base of the provider test doubles: a node:http server on 127.0.0.1 that reads each request
// whole, records it, and answers either a scripted failure (queued with `failNext`) or what the
// double's handler decides.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";

export interface RecordedRequest {
  method: string;
  /** Path and query as sent. */
  url: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The body as text (gunzipped when Content-Encoding: gzip). */
  body: string;
}

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  /** JSON-encoded unless a string. */
  body?: unknown;
}

export type Handler = (req: RecordedRequest) => Reply | Promise<Reply>;

export class DoubleServer {
  readonly requests: RecordedRequest[] = [];
  /** Scripted replies, used before the handler (first in, first out). */
  private readonly scripted: Array<{ match: (req: RecordedRequest) => boolean; reply: Reply }> = [];
  /** Delay before every answer (to test timeouts and concurrency). */
  delayMs = 0;
  inFlight = 0;
  maxInFlight = 0;
  private server: http.Server | undefined;
  url = "";

  constructor(private readonly handler: Handler) {}

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** The next request matching `match` (default: any) gets `reply` instead of the handler's answer. */
  failNext(reply: Reply, match: (req: RecordedRequest) => boolean = () => true): void {
    this.scripted.push({ match, reply });
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      let raw = Buffer.concat(chunks);
      if (req.headers["content-encoding"] === "gzip") raw = gunzipSync(raw);
      const recorded: RecordedRequest = {
        method: req.method ?? "",
        url: req.url ?? "",
        path: new URL(req.url ?? "/", "http://x").pathname,
        headers: req.headers,
        body: raw.toString("utf8"),
      };
      this.requests.push(recorded);
      if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
      const i = this.scripted.findIndex((s) => s.match(recorded));
      const reply = i >= 0 ? this.scripted.splice(i, 1)[0]!.reply : await this.handler(recorded);
      const body = reply.body === undefined ? "" : typeof reply.body === "string" ? reply.body : JSON.stringify(reply.body);
      const headers: Record<string, string> = { ...(reply.headers ?? {}) };
      if (typeof reply.body !== "string" && reply.body !== undefined && !headers["content-type"]) {
        headers["content-type"] = "application/json; charset=utf-8";
      }
      if (!res.destroyed) res.writeHead(reply.status, headers).end(body);
    } catch (err) {
      if (!res.destroyed) res.writeHead(500, { "content-type": "text/plain" }).end(`double crashed: ${String(err)}`);
    } finally {
      this.inFlight--;
    }
  }
}

/** The media type of a Content-Type header, lower-cased, without parameters. */
export function mediaType(header: string | undefined): string {
  return (header ?? "").split(";")[0]!.trim().toLowerCase();
}

/** A port where nothing listens (a server was there a moment ago): connection refused. */
export async function deadUrl(): Promise<string> {
  const s = await new DoubleServer(() => ({ status: 200 })).start();
  const url = s.url;
  await s.close();
  return url;
}
