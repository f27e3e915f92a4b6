// A webhook receiver on 127.0.0.1 for tests: each request's webhook-id and body, handed to `onRequest`,
// which answers it (at once, after a delay, or never until the test lets it); or a tally of the users
// each webhook-id reached, for the exactly-once checks across processes.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "vitest";

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

/** A receiver that tallies what it got: per path, the `user` of each JSON body by webhook-id. */
export interface Tally extends Receiver {
  /** webhook-id → the users it carried, one entry per request received on `path`. */
  got(path: string): Map<string, string[]>;
  /** webhook-id → when each of those requests was received (ms since epoch). */
  arrivals(path: string): Map<string, number[]>;
}

/** A tallying receiver answering 200 after `latencyMs(path)`. */
export async function startTally(latencyMs: (path: string) => number = () => 0): Promise<Tally> {
  const byPath = new Map<string, Map<string, string[]>>();
  const got = (p: string) => {
    const m = byPath.get(p) ?? new Map<string, string[]>();
    byPath.set(p, m);
    return m;
  };
  const timesByPath = new Map<string, Map<string, number[]>>();
  const arrivals = (p: string) => {
    const m = timesByPath.get(p) ?? new Map<string, number[]>();
    timesByPath.set(p, m);
    return m;
  };
  const receiver = await startReceiver(({ id, path, body }, res) => {
    const m = got(path);
    m.set(id, [...(m.get(id) ?? []), String(JSON.parse(body).user)]);
    const times = arrivals(path);
    times.set(id, [...(times.get(id) ?? []), Date.now()]);
    setTimeout(() => res.writeHead(200).end(), latencyMs(path));
  });
  return { ...receiver, got, arrivals };
}

/**
 * Every user reached, each under exactly one of the delivery ids `ids` (a resend after a crash
 * carries the same id); returns how many requests repeated an id.
 */
export function expectEachOnce(got: Map<string, string[]>, ids: string[], users: string[]): number {
  const byUser = new Map<string, Set<string>>();
  let repeats = 0;
  for (const id of ids) {
    const carried = got.get(id) ?? [];
    repeats += Math.max(0, carried.length - 1);
    for (const u of carried) byUser.set(u, (byUser.get(u) ?? new Set()).add(id));
  }
  expect([...byUser.keys()].sort()).toEqual([...users].sort());
  const twice = [...byUser].filter(([, s]) => s.size > 1).map(([u]) => u);
  expect(twice, "users reached under two delivery ids").toEqual([]);
  return repeats;
}
