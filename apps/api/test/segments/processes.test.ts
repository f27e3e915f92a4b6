// The segment engine across real processes: a SIGKILL while events stream in with segments live
// loses no hand-off, and two worker processes on one database keep the same memberships without
// recording an enter or exit twice. "Correct" is what a full recompute finds: a copy of each
// segment created afterwards is computed from scratch, and the live one must converge to it.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { SegmentDefinition } from "@tidings/schema";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../support/app.ts";
import {
  callApi,
  killStarted,
  postmasterPid,
  readCredentials,
  type ServerProcess,
  startServer,
  waitGone,
} from "../process/server-process.ts";

const dirs: string[] = [];
afterAll(async () => {
  await killStarted();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const DEFINITIONS: Record<string, SegmentDefinition> = {
  pro: { entryNode: { type: "Trait", id: "t", path: "plan", operator: { type: "Equals", value: "pro" } }, nodes: [] },
  buyers: {
    entryNode: {
      type: "Performed",
      id: "p",
      event: "Bought",
      times: 3,
      timesOperator: ">=",
      properties: [{ path: "amount", operator: { type: "GreaterThanOrEqual", value: 10 } }],
    },
    nodes: [],
  },
  notPro: {
    entryNode: { type: "Not", id: "n", child: "t" },
    nodes: [{ type: "Trait", id: "t", path: "plan", operator: { type: "Equals", value: "pro" } }],
  },
};

const admin = callApi;

async function members(server: ServerProcess, key: string, id: string): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | null = null;
  do {
    const body: any = await admin(
      server,
      key,
      "GET",
      `/api/admin/segments/${id}/users?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
    );
    out.push(...body.items.map((u: { userId: string }) => u.userId));
    cursor = body.nextCursor;
  } while (cursor);
  return out.sort();
}

/** Streams identify/track batches about 60 users until stopped or the server is gone. */
function stream(servers: ServerProcess[], writeKey: string) {
  const auth = `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}`;
  let stopping = false;
  let sent = 0;
  const loop = async (l: number) => {
    for (let n = 0; !stopping; n++) {
      const batch = Array.from({ length: 10 }, (_, i) => {
        const userId = `u${(l * 31 + n * 7 + i) % 60}`;
        return (n + i) % 3 === 0
          ? { type: "identify", userId, traits: { plan: (n + i + l) % 2 ? "pro" : "free" }, messageId: `i-${l}-${n}-${i}` }
          : { type: "track", userId, event: "Bought", properties: { amount: (n * i) % 20 }, messageId: `t-${l}-${n}-${i}` };
      });
      try {
        const res = await fetch(`${servers[l % servers.length]!.url}/v1/batch`, {
          method: "POST",
          headers: { authorization: auth, "content-type": "application/json" },
          body: JSON.stringify({ batch }),
        });
        await res.text();
        if (res.status === 204) sent += batch.length;
      } catch {
        return;
      }
    }
  };
  const loops = Array.from({ length: 4 }, (_, l) => loop(l));
  return {
    sent: () => sent,
    stop: async () => {
      stopping = true;
      await Promise.all(loops);
    },
  };
}

/** Creates a from-scratch copy of each segment and waits until every live segment equals its copy. */
async function expectConverged(server: ServerProcess, key: string, live: Record<string, string>) {
  const copies: Record<string, string> = {};
  for (const name of Object.keys(live)) {
    copies[name] = (
      await admin(server, key, "PUT", "/api/admin/segments", { name: `${name}-copy-${Date.now()}`, definition: DEFINITIONS[name] })
    ).id;
  }
  const deadline = Date.now() + 30_000;
  for (;;) {
    const pairs = await Promise.all(
      Object.keys(live).map(async (name) => {
        const copy = await admin(server, key, "GET", `/api/admin/segments/${copies[name]}`);
        return {
          name,
          ready: copy.lastRecomputed !== undefined,
          live: await members(server, key, live[name]!),
          copy: await members(server, key, copies[name]!),
        };
      }),
    );
    const done = pairs.every((p) => p.ready && JSON.stringify(p.live) === JSON.stringify(p.copy));
    if (done || Date.now() > deadline) {
      for (const p of pairs) expect(p.live, `${p.name}: live membership vs a full recompute`).toEqual(p.copy);
      for (const p of pairs) expect(p.copy.length, p.name).toBeGreaterThan(0);
      return;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Every (segment, user)'s history alternates enter, exit, enter… and ends as membership stands. */
async function expectCleanHistory(databaseUrl: string) {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query<{ segment_id: string; profile_id: string; entries: boolean[]; member: boolean }>(
      `SELECT c.segment_id, c.profile_id, array_agg(c.entered ORDER BY c.id) AS entries,
         EXISTS (SELECT 1 FROM segment_memberships m WHERE m.workspace_id = c.workspace_id AND m.segment_id = c.segment_id AND m.profile_id = c.profile_id) AS member
       FROM segment_membership_changes c GROUP BY c.workspace_id, c.segment_id, c.profile_id`,
    );
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) {
      for (const [i, entered] of r.entries.entries()) expect(entered, `${r.profile_id} in ${r.segment_id}: ${r.entries}`).toBe(i % 2 === 0);
      expect(r.entries.length % 2 === 1, `${r.profile_id} in ${r.segment_id}: history ${r.entries} vs member ${r.member}`).toBe(r.member);
    }
  } finally {
    await db.end();
  }
}

describe("segment engine across processes", () => {
  it("a SIGKILL while events stream in loses no hand-off: after restart, membership equals a full recompute", {
    timeout: 120_000,
  }, async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "tidings-seg-crash-"));
    dirs.push(dir);
    const first = await startServer(dir);
    const creds = await readCredentials(dir);
    const live: Record<string, string> = {};
    for (const name of Object.keys(DEFINITIONS)) {
      live[name] = (await admin(first, creds.adminApiKey, "PUT", "/api/admin/segments", { name, definition: DEFINITIONS[name] })).id;
    }
    const load = stream([first], creds.writeKey);
    await new Promise((r) => setTimeout(r, 2_500));
    const postmaster = postmasterPid(dir);
    process.kill(-first.child.pid!, "SIGKILL");
    process.kill(postmaster, "SIGKILL");
    await load.stop();
    await waitGone(first.child.pid!, true);
    await waitGone(postmaster);
    expect(load.sent()).toBeGreaterThan(100);

    const second = await startServer(dir);
    await expectConverged(second, creds.adminApiKey, live);
  });

  it("two worker processes on one database: the same memberships, no enter or exit recorded twice", { timeout: 120_000 }, async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "tidings-seg-workers-"));
    dirs.push(dir);
    const databaseUrl = await createTestDatabase();
    const env = {
      DATABASE_URL: databaseUrl,
      TIDINGS_ROOT_KEY: "root-key-for-two-workers-0123456789",
      TIDINGS_SECRET_KEY: "secret-key-for-two-workers-0123456789abc",
    };
    const api = await startServer(dir, { ...env, TIDINGS_ROLE: "all" });
    const worker = await startServer(dir, { ...env, TIDINGS_ROLE: "worker" });
    const ws = await admin(api, env.TIDINGS_ROOT_KEY, "POST", "/api/admin/workspaces", { name: "two-workers" });
    const adminKey: string = ws.adminApiKey;
    const live: Record<string, string> = {};
    for (const name of Object.keys(DEFINITIONS)) {
      live[name] = (await admin(api, adminKey, "PUT", "/api/admin/segments", { name, definition: DEFINITIONS[name] })).id;
    }
    const load = stream([api], ws.writeKey);
    await new Promise((r) => setTimeout(r, 3_000));
    await load.stop();
    expect(load.sent()).toBeGreaterThan(100);
    await expectConverged(api, adminKey, live);
    await expectCleanHistory(databaseUrl);
    expect(worker.output()).not.toMatch(/error/i);
  });
});
