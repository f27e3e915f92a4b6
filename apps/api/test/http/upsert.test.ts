// One PUT semantics for every admin resource (src/db/upsert.ts), table-driven: concurrent first
// PUTs of one key both succeed with one row, a PUT that changes nothing keeps `updatedAt`, a key
// taken by another row is a 409, an unknown `id` creates with that id.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp, type TestWorkspace } from "../support/app.ts";
import { bearer, request } from "../support/http.ts";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

type Body = Record<string, unknown>;
interface Resource {
  path: string;
  /** A body naming its key: `key` is a name, or a provider's channel. */
  body(key: string): Body;
  /** Bodies that, after `body(key)`, change nothing. */
  same(key: string): Body[];
  /** The same resource with something changed. */
  changed(key: string): Body;
  /** Two distinct keys. */
  keys: [string, string];
}

const PASSWORD = "smtp-password-0123456789-LAST";
const smtp = { host: "smtp.acme.test", port: 587, username: "mailer", from: "Acme <hello@acme.test>" };
const trait = (value: string) => ({
  entryNode: { type: "Trait", id: "plan", path: "plan", operator: { type: "Equals", value } },
  nodes: [],
});

const resources: Record<string, Resource> = {
  segments: {
    path: "/api/admin/segments",
    body: (name) => ({ name, definition: trait("pro") }),
    // Key order of the definition does not matter; an omitted definition keeps the stored one.
    same: (name) => [
      { name },
      {
        name,
        definition: { nodes: [], entryNode: { operator: { value: "pro", type: "Equals" }, path: "plan", id: "plan", type: "Trait" } },
      },
    ],
    changed: (name) => ({ name, definition: trait("enterprise") }),
    keys: ["seg-a", "seg-b"],
  },
  templates: {
    path: "/api/admin/content/templates",
    body: (name) => ({ name, definition: { type: "Sms", body: "Hi {{ user.id }}" } }),
    same: (name) => [{ name }, { name, definition: { body: "Hi {{ user.id }}", type: "Sms" } }],
    changed: (name) => ({ name, definition: { type: "Sms", body: "Hello {{ user.id }}" } }),
    keys: ["tpl-a", "tpl-b"],
  },
  "subscription groups": {
    path: "/api/admin/subscription-groups",
    body: (name) => ({ name, channel: "Email", type: "OptIn" }),
    same: (name) => [{ name, channel: "Email", type: "OptIn" }],
    changed: (name) => ({ name, channel: "Email", type: "OptOut" }),
    keys: ["grp-a", "grp-b"],
  },
  journeys: {
    path: "/api/admin/journeys",
    body: (name) => ({ name, canRunMultiple: true, draft: { nodes: [], edges: [], zoom: 1 } }),
    same: (name) => [{ name }, { name, canRunMultiple: true, status: "NotStarted", draft: { zoom: 1, edges: [], nodes: [] } }],
    changed: (name) => ({ name, canRunMultiple: false }),
    keys: ["journey-a", "journey-b"],
  },
  providers: {
    path: "/api/admin/providers",
    body: (channel) =>
      channel === "Email" ? { channel, type: "Smtp", config: { ...smtp, password: PASSWORD } } : { channel, type: "Log" },
    // Secrets compare decrypted: left out, or sent back masked, they are unchanged.
    same: (channel) =>
      channel === "Email"
        ? [
            { channel, type: "Smtp", config: { ...smtp, password: PASSWORD } },
            { channel, type: "Smtp", config: {} },
            { channel, type: "Smtp", config: { ...smtp, password: "••••LAST" } },
          ]
        : [{ channel, type: "Log" }],
    changed: (channel) => ({ channel, type: "Smtp", config: { ...smtp, host: "smtp2.acme.test", password: PASSWORD } }),
    keys: ["Email", "Sms"],
  },
};

const put = (r: Resource, w: TestWorkspace, body: Body) =>
  request(t.url, "PUT", r.path, { headers: bearer(w.adminKey), body: { workspaceId: w.id, ...body } });
const list = async (r: Resource, w: TestWorkspace) =>
  (await request(t.url, "GET", `${r.path}?limit=100`, { headers: bearer(w.adminKey) })).body.items as { id: string }[];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(Object.entries(resources))("PUT %s", (_, r) => {
  it("two concurrent first PUTs of one key both answer 200 with one row, 10 times", async () => {
    for (let round = 0; round < 10; round++) {
      const w = await t.newWorkspace();
      const key = r.keys[0];
      // Even rounds send the same body twice (one creates, the other finds it unchanged), odd
      // rounds two different ones (one creates, the other updates it).
      const bodies = round % 2 === 0 ? [r.body(key), r.body(key)] : [r.body(key), r.changed(key)];
      const results = await Promise.all(bodies.map((b) => put(r, w, b)));
      expect(
        results.map((res) => res.status),
        `round ${round}: ${JSON.stringify(results.map((res) => res.body.error?.message))}`,
      ).toEqual([200, 200]);
      expect(results[0]!.body.id).toBe(results[1]!.body.id);
      expect((await list(r, w)).map((row) => row.id)).toEqual([results[0]!.body.id]);
    }
  });

  it("a PUT that changes nothing keeps updatedAt; a change moves it", async () => {
    const w = await t.newWorkspace();
    const key = r.keys[0];
    const first = await put(r, w, r.body(key));
    expect(first.status).toBe(200);
    for (const body of r.same(key)) {
      await sleep(5);
      const again = await put(r, w, body);
      expect(again.status, JSON.stringify(body)).toBe(200);
      expect(again.body, JSON.stringify(body)).toEqual(first.body);
    }
    const byId = await put(r, w, { id: first.body.id, ...r.body(key) });
    expect(byId.body).toEqual(first.body);
    await sleep(5);
    const changed = await put(r, w, r.changed(key));
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ id: first.body.id, createdAt: first.body.createdAt });
    expect(changed.body.updatedAt).toBeGreaterThan(first.body.updatedAt);
  });

  it("a key taken by another row is a 409, by rename or by a create with a new id; nothing changes", async () => {
    const w = await t.newWorkspace();
    const [a, b] = r.keys;
    const first = await put(r, w, r.body(a));
    const second = await put(r, w, r.body(b));
    expect([first.status, second.status]).toEqual([200, 200]);
    for (const body of [
      { ...r.body(a), id: second.body.id },
      { ...r.body(a), id: randomUUID() },
    ]) {
      const res = await put(r, w, body);
      expect(res.status, JSON.stringify(body)).toBe(409);
      expect(res.body.error.code).toBe("CONFLICT");
    }
    const rows = await list(r, w);
    expect(rows.map((row) => row.id).sort()).toEqual([first.body.id, second.body.id].sort());
    // The segment engine may have recomputed the segment meanwhile: its fields are not the PUT's.
    const asPut = ({ lastRecomputed: _l, memberCount: _m, ...row }: Record<string, unknown>) => row;
    expect(asPut(rows.find((row) => row.id === second.body.id)!)).toEqual(asPut(second.body));
  });

  it("an id that does not exist creates the resource with that id", async () => {
    const w = await t.newWorkspace();
    const id = randomUUID();
    const res = await put(r, w, { id, ...r.body(r.keys[0]) });
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(id);
    expect((await list(r, w)).map((row) => row.id)).toEqual([id]);
  });
});
