// events.identity_id is the id an event was sent under; the view events_resolved gives each
// event the profile it belongs to now, through the identity links. Code attributing events to
// profiles (the segment engine) reads the view.
import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { readMigrations } from "../../src/db/migrate.ts";
import { normalizeEvent } from "../../src/ingest/normalize.ts";
import { createTestApp, type TestApp } from "../support/app.ts";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

const send = (workspaceId: string, body: Record<string, unknown>) =>
  t.ctx.ingestor.ingest(workspaceId, [
    normalizeEvent({ messageId: randomUUID(), ...body } as never, body.type as never, {}, new Date(), 32768, "(body)"),
  ]);

async function resolved(workspaceId: string) {
  const { rows } = await t.ctx.db.pool.query(
    "SELECT event, identity_id, profile_id FROM events_resolved WHERE workspace_id = $1 AND type = 'track' ORDER BY event",
    [workspaceId],
  );
  return rows;
}

describe("events_resolved", () => {
  it("gives the events of an anonymousId to the user it is linked to, and follows later links", async () => {
    const { id: ws } = await t.newWorkspace();
    await send(ws, { type: "track", anonymousId: "anon-1", event: "1 browsed" });
    await send(ws, { type: "track", userId: "user-1", anonymousId: "anon-2", event: "2 signed up" });
    expect(await resolved(ws)).toEqual([
      { event: "1 browsed", identity_id: "anon-1", profile_id: "anon-1" },
      { event: "2 signed up", identity_id: "user-1", profile_id: "user-1" },
    ]);

    await send(ws, { type: "identify", anonymousId: "anon-1", userId: "user-1" });
    await send(ws, { type: "track", userId: "user-1", event: "3 bought" });
    expect(await resolved(ws)).toEqual([
      { event: "1 browsed", identity_id: "anon-1", profile_id: "user-1" },
      { event: "2 signed up", identity_id: "user-1", profile_id: "user-1" },
      { event: "3 bought", identity_id: "user-1", profile_id: "user-1" },
    ]);

    // user-1 becomes user-2: the anonymous events follow without being rewritten.
    await send(ws, { type: "alias", previousId: "user-1", userId: "user-2" });
    expect(await resolved(ws)).toEqual([
      { event: "1 browsed", identity_id: "anon-1", profile_id: "user-2" },
      { event: "2 signed up", identity_id: "user-1", profile_id: "user-2" },
      { event: "3 bought", identity_id: "user-1", profile_id: "user-2" },
    ]);
    // Every resolved event has its profile; joining identity_id to profiles would find none.
    const { rows } = await t.ctx.db.pool.query(
      `SELECT count(p.profile_id)::int AS via_view,
              (SELECT count(*)::int FROM events e JOIN profiles p2 ON p2.workspace_id = e.workspace_id AND p2.profile_id = e.identity_id WHERE e.workspace_id = $1 AND e.type = 'track') AS via_identity_id
       FROM events_resolved r LEFT JOIN profiles p ON p.workspace_id = r.workspace_id AND p.profile_id = r.profile_id
       WHERE r.workspace_id = $1 AND r.type = 'track'`,
      [ws],
    );
    expect(rows).toEqual([{ via_view: 3, via_identity_id: 0 }]);
  });
});

describe("migration events_identity_id", () => {
  it("renames events.profile_id to identity_id, keeping the stored events", async () => {
    const admin = new pg.Client({ connectionString: inject("adminUrl") });
    await admin.connect();
    const name = `tidings_rename_${process.pid}_${Date.now()}`;
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(inject("adminUrl"));
    url.pathname = `/${name}`;
    const c = new pg.Client({ connectionString: url.toString() });
    await c.connect();
    try {
      const migrations = await readMigrations();
      const at = migrations.findIndex((m) => m.name.endsWith("_events_identity_id"));
      expect(at).toBeGreaterThan(0);
      for (const m of migrations.slice(0, at)) await c.query(m.sql);
      const ws = (await c.query(`INSERT INTO workspaces (id, name) VALUES (gen_random_uuid(), 'w') RETURNING id`)).rows[0].id;
      await c.query(
        `INSERT INTO events (workspace_id, message_id, type, profile_id, anonymous_id, event_time, received_at, payload)
         VALUES ($1, 'm1', 'track', 'anon-9', 'anon-9', now(), now(), '{}')`,
        [ws],
      );
      await c.query(`INSERT INTO profile_aliases (workspace_id, alias_id, profile_id) VALUES ($1, 'anon-9', 'user-9')`, [ws]);
      for (const m of migrations.slice(at)) await c.query(m.sql);
      expect((await c.query(`SELECT message_id, identity_id, profile_id FROM events_resolved`)).rows).toEqual([
        { message_id: "m1", identity_id: "anon-9", profile_id: "user-9" },
      ]);
      const { rows } = await c.query(`SELECT indexname FROM pg_indexes WHERE tablename = 'events' ORDER BY indexname`);
      expect(rows.map((r) => r.indexname)).toEqual([
        "events_pkey",
        "events_workspace_id_event_event_time_idx",
        "events_workspace_id_event_time_idx",
        "events_workspace_id_identity_id_event_time_idx",
        "events_workspace_id_received_at_idx",
      ]);
    } finally {
      await c.end();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }
  });
});
