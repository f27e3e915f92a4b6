// Segment tests: events in through the public API, segments and members through the admin API,
// the engine's clock in the test's hands.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect } from "vitest";
import type { SegmentDefinition, SegmentNode } from "@tidings/schema";
import pg from "pg";
import { createDb, type Db } from "../../src/db/client.ts";
import type { JobLayer } from "../../src/jobs/index.ts";
import { createTestDatabase, type TestApp, type TestWorkspace } from "../support/app.ts";
import { basic, bearer, request } from "../support/http.ts";

/** A clock the engine reads; tests move it. */
export class TestClock {
  constructor(public now = Math.floor(Date.now() / 1000) * 1000) {}
  readonly read = () => this.now;
  advance(ms: number) {
    this.now += ms;
  }
}

export const SECOND = 1000;
export const DAY = 86_400_000;

export type TestEvent = Record<string, unknown>;

export const identify = (userId: string, traits: Record<string, unknown>, time: number, extra: TestEvent = {}): TestEvent => ({
  type: "identify",
  userId,
  traits,
  timestamp: new Date(time).toISOString(),
  messageId: `m-${randomUUID()}`,
  ...extra,
});

export const track = (
  id: { userId?: string; anonymousId?: string },
  event: string,
  time: number,
  properties: Record<string, unknown> = {},
  extra: TestEvent = {},
): TestEvent => ({
  type: "track",
  ...id,
  event,
  properties,
  timestamp: new Date(time).toISOString(),
  messageId: `m-${randomUUID()}`,
  ...extra,
});

/** A definition of one node. */
export const single = (node: Omit<SegmentNode, "id"> & { type: SegmentNode["type"] }): SegmentDefinition =>
  ({ entryNode: { ...node, id: "root" }, nodes: [] }) as SegmentDefinition;

export interface SegmentWorld {
  ws: TestWorkspace;
  send(events: TestEvent[]): Promise<void>;
  segment(definition: SegmentDefinition | undefined, name?: string): Promise<string>;
  admin(method: string, path: string, body?: unknown): Promise<any>;
  settle(): Promise<void>;
  members(segmentId: string): Promise<string[]>;
  entered(segmentId: string): Promise<Map<string, number>>;
}

export async function segmentWorld(t: TestApp): Promise<SegmentWorld> {
  const ws = await t.newWorkspace();
  const admin = async (method: string, path: string, body?: unknown) => {
    const res = await request(t.url, method, path, { headers: bearer(ws.adminKey), ...(body !== undefined ? { body } : {}) });
    expect(res.status, `${method} ${path}: ${res.text}`).toBeLessThan(300);
    return res.body;
  };
  const page = async (segmentId: string) => {
    const out = new Map<string, number>();
    let cursor: string | null = null;
    do {
      const body: any = await admin(
        "GET",
        `/api/admin/segments/${segmentId}/users?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      );
      for (const u of body.items) out.set(u.userId, u.enteredAt);
      cursor = body.nextCursor;
    } while (cursor);
    return out;
  };
  return {
    ws,
    admin,
    async send(events) {
      const res = await request(t.url, "POST", "/api/public/apps/batch", { headers: basic(ws.writeKey), body: { batch: events } });
      expect(res.status, res.text).toBe(204);
    },
    async segment(definition, name = `s-${randomUUID()}`) {
      const body = await admin("PUT", "/api/admin/segments", { name, ...(definition ? { definition } : {}) });
      return body.id as string;
    },
    settle: () => t.ctx.segments.settle(ws.id),
    members: async (id) => [...(await page(id)).keys()].sort(),
    entered: page,
  };
}

/**
 * Holds the segment engine off a workspace: takes its refresh lock on a connection of its own (a
 * refresh finding it taken returns at once). `release` lets go and returns the connection (once).
 */
export async function holdEngine(pool: pg.Pool, workspaceId: string) {
  const client = await pool.connect();
  await client.query("SELECT pg_advisory_lock(hashtextextended($1, 0))", [`segments:${workspaceId}`]);
  let released = false;
  return {
    client,
    /** Idempotent: a test may let go early and again in its `finally`. */
    async release() {
      if (released) return;
      released = true;
      try {
        await client.query("SELECT pg_advisory_unlock_all()");
      } finally {
        client.release();
      }
    },
  };
}

/** The job layer's surface the engine uses, recording what it is asked. */
export function recordingJobs() {
  const added: { task: string; payload: unknown }[] = [];
  const listeners = new Map<string, (payload: string) => void | Promise<void>>();
  const jobs: JobLayer = {
    add: async (task, payload) => {
      added.push({ task, payload });
    },
    recurring: () => {},
    listen: (channel, handler) => {
      listeners.set(channel, handler);
    },
    register: () => {},
    start: async () => {},
    stop: async () => {},
    queueStats: async () => ({ depth: 0, oldestAgeSeconds: 0 }),
    slots: () => 0,
  };
  return { jobs, added, notify: (channel: string, payload: string) => listeners.get(channel)!(payload) };
}

/**
 * A database of the test file's own, without an app: the server's client (`db`, with a pool of
 * `poolSize`) and an admin connection, opened before the file's tests and closed after them.
 */
export function testDatabase(poolSize = 2) {
  const t = {} as { url: string; db: Db; admin: pg.Client };
  beforeAll(async () => {
    t.url = await createTestDatabase();
    t.db = createDb(t.url, poolSize);
    t.admin = new pg.Client({ connectionString: t.url });
    await t.admin.connect();
  });
  afterAll(async () => {
    await t.admin?.end();
    await t.db?.close();
  });
  return t;
}
