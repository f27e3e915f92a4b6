// bench:journeys' world (bench/journeys.ts): the bench server, its database, the receiver, and
// what every phase builds on (segments, templates, journey definitions, waiting, logging).
import type { JourneyBodyNode, JourneyDefinition } from "@tidings/schema";
import type pg from "pg";
import type { BenchServer, PathCount, startReceiver } from "../support.ts";

/** Users (phase 1), timers (phases 2 and 3): BENCH_JOURNEY_USERS. */
export const N = Number(process.env.BENCH_JOURNEY_USERS ?? 100_000);
/** The body the bare loop sends too (bench/support.ts), so both send the same bytes. */
const BODY = '{"user":"{{ user.id }}","plan":"{{ user.plan }}"}';

export const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const log = (s: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${s}`);
/** A PostgreSQL instant (ms since epoch) on this process's performance.now() scale. */
export const perfOf = (epochMs: number) => epochMs - performance.timeOrigin;

export async function until<T>(
  what: string,
  read: () => Promise<T> | T,
  done: (v: T) => boolean,
  timeoutMs: number,
  everyMs = 100,
): Promise<T> {
  const end = performance.now() + timeoutMs;
  let said = performance.now();
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (performance.now() > end) throw new Error(`${what}: not done after ${secs(timeoutMs)} (last: ${JSON.stringify(v)})`);
    if (performance.now() - said > 10_000) {
      log(`  … ${what}: ${JSON.stringify(v)}`);
      said = performance.now();
    }
    await sleep(everyMs);
  }
}

/** Requests on several paths taken together. */
export function merged(counts: PathCount[]): PathCount {
  const seen = counts.filter((c) => c.count > 0);
  return {
    count: seen.reduce((a, c) => a + c.count, 0),
    first: Math.min(...seen.map((c) => c.first)),
    last: Math.max(...seen.map((c) => c.last)),
  };
}

/** A Trait segment: `path` equals `value`. */
export const trait = (path: string, value: string) => ({
  entryNode: { type: "Trait", id: "t", path, operator: { type: "Equals", value } },
  nodes: [],
});
export const messageNode = (id: string, templateId: string, child: string): JourneyBodyNode => ({
  id,
  type: "MessageNode",
  channel: "Webhook",
  templateId,
  child,
});
export const delayNode = (seconds: number, child: string): JourneyBodyNode => ({
  id: "wait",
  type: "DelayNode",
  variant: { type: "Second", seconds },
  child,
});
export const journeyDef = (segment: string, nodes: JourneyBodyNode[]): JourneyDefinition => ({
  entryNode: { type: "EntryNode", segment, child: nodes[0]!.id },
  nodes,
  exitNode: { type: "ExitNode", id: "ExitNode" },
});

export type Receiver = ReturnType<typeof startReceiver>;

export interface World {
  s: BenchServer;
  db: pg.Client;
  receiver: Receiver;
  receiverUrl: string;
}

export async function segment(w: World, name: string, definition?: unknown, members?: number): Promise<string> {
  const { id } = await w.s.admin("PUT", "/api/admin/segments", { name, ...(definition ? { definition } : {}) });
  if (members !== undefined) {
    await until(
      `segment ${name} computed`,
      async () =>
        Number(
          (
            await w.db.query("SELECT count(*) AS n FROM segment_memberships WHERE workspace_id = $1 AND segment_id = $2", [
              w.s.workspaceId,
              id,
            ])
          ).rows[0].n,
        ),
      (n) => n === members,
      120_000,
      200,
    );
  }
  return id;
}

export async function template(w: World, name: string, hook: string): Promise<string> {
  const definition = { type: "Webhook", url: `${w.receiverUrl}${hook}`, method: "POST", body: BODY };
  return (await w.s.admin("PUT", "/api/admin/content/templates", { name, definition })).id;
}
