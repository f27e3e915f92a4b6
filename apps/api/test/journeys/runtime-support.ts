// Journey runtime tests: a workspace with a webhook template whose body names the run's user, node
// and event, journeys put through the admin API, and the runtime's clock in the test's hands.
import { randomUUID } from "node:crypto";
import type { JourneyBodyNode, JourneyDefinition } from "@tidings/schema";
import { waitFor } from "../broadcasts/support.ts";
import { type SegmentWorld, segmentWorld, type TestClock } from "../segments/support.ts";
import type { TestApp } from "../support/app.ts";
import type { Receiver } from "../support/receiver.ts";

export interface JourneyWorld extends SegmentWorld {
  t: TestApp;
  clock: TestClock;
  /** A webhook template posting {user, tag, sku} to the receiver. */
  template(tag: string): Promise<string>;
  manualSegment(): Promise<string>;
  add(segmentId: string, users: string[]): Promise<void>;
  remove(segmentId: string, users: string[]): Promise<void>;
  journey(body: Record<string, unknown>): Promise<any>;
  /** Applies what is due at the clock: the engine, then the runtime (twice: entries a step queues). */
  settle(): Promise<void>;
  runs(journeyId: string, query?: string): Promise<any[]>;
  stats(journeyId: string, query?: string): Promise<any>;
  /** Deliveries of a journey once none is queued or sending. */
  deliveries(journeyId: string): Promise<any[]>;
}

export async function journeyWorld(t: TestApp, clock: TestClock, receiver: Receiver): Promise<JourneyWorld> {
  const w = await segmentWorld(t);
  const settle = async () => {
    await t.ctx.segments.settle(w.ws.id);
    await t.ctx.journeys.settle(w.ws.id);
    await t.ctx.segments.settle(w.ws.id);
    await t.ctx.journeys.settle(w.ws.id);
  };
  return {
    ...w,
    t,
    clock,
    settle,
    async template(tag) {
      const body = await w.admin("PUT", "/api/admin/content/templates", {
        name: `tpl-${tag}-${randomUUID()}`,
        definition: {
          type: "Webhook",
          url: `${receiver.url}/${tag}`,
          method: "POST",
          body: `{"user":"{{ user.id }}","tag":"${tag}","sku":"{{ event.properties.sku }}"}`,
        },
      });
      return body.id;
    },
    manualSegment: () => w.segment(undefined),
    async add(segmentId, users) {
      await w.admin("PUT", `/api/admin/segments/${segmentId}/members`, { add: users });
    },
    async remove(segmentId, users) {
      await w.admin("PUT", `/api/admin/segments/${segmentId}/members`, { remove: users });
    },
    journey: (body) => w.admin("PUT", "/api/admin/journeys", { name: `j-${randomUUID()}`, ...body }),
    async runs(journeyId, query = "") {
      return (await w.admin("GET", `/api/admin/journeys/${journeyId}/runs?limit=500${query}`)).items;
    },
    stats: (journeyId, query = "") => w.admin("GET", `/api/admin/journeys/${journeyId}/stats${query ? `?${query}` : ""}`),
    deliveries: (journeyId) =>
      waitFor(
        async () => (await w.admin("GET", `/api/admin/deliveries?journeyId=${journeyId}&limit=500`)).items as any[],
        (ds) => ds.every((d) => d.status !== "Queued" && d.status !== "Sending"),
      ),
  };
}

/** A definition: the entry, then `nodes` (the first node is the entry's child). */
export function definition(
  entry: JourneyDefinition["entryNode"] | { segment: string } | { event: string },
  nodes: JourneyBodyNode[],
): JourneyDefinition {
  const first = nodes[0]?.id ?? "ExitNode";
  const entryNode =
    "type" in entry
      ? entry
      : "segment" in entry
        ? { type: "EntryNode" as const, segment: entry.segment, child: first }
        : { type: "EventEntryNode" as const, event: entry.event, child: first };
  return { entryNode: { ...entryNode, child: first }, nodes, exitNode: { type: "ExitNode", id: "ExitNode" } };
}

export const message = (id: string, templateId: string, child = "ExitNode"): JourneyBodyNode => ({
  id,
  type: "MessageNode",
  channel: "Webhook",
  templateId,
  child,
});
export const delaySeconds = (id: string, seconds: number, child: string): JourneyBodyNode => ({
  id,
  type: "DelayNode",
  variant: { type: "Second", seconds },
  child,
});

export const waitForSegment = (
  id: string,
  segmentId: string,
  child: string,
  timeoutChild: string,
  timeoutSeconds = 3600,
): JourneyBodyNode => ({
  id,
  type: "WaitForNode",
  segmentChildren: [{ segmentId, child }],
  timeoutSeconds,
  timeoutChild,
});

/** A field of each run of a journey, by user. */
export async function runsByUser(w: JourneyWorld, journeyId: string, field: string): Promise<Record<string, unknown>> {
  return Object.fromEntries((await w.runs(journeyId)).map((r) => [r.userId, r[field]]));
}
