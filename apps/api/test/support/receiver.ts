// A webhook receiver on 127.0.0.1 for tests: each request's webhook-id and body, handed to `onRequest`,
// which answers it (at once, after a delay, or never until the test lets it).
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface Received {
  id: string;
  path: string;
  body: string;
}

export interface Receiver {
  url: string;
  close(): Promise<void>;
}

export async function startReceiver(
  onRequest: (r: Received, res: ServerResponse, req: IncomingMessage) => void = (_r, res) => res.writeHead(200).end(),
): Promise<Receiver> {
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => onRequest({ id: String(req.headers["webhook-id"]), path: req.url ?? "/", body }, res, req));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
