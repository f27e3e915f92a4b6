// What a running journey uses is held (src/db/references.ts): it cannot be deleted or changed
// into something the journey cannot send (409 naming the journey), also when the DELETE or the
// change races the start; resources nobody running uses stay deletable.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../support/app.ts";
import { bearer, request } from "../support/http.ts";
import { insertGroup, insertSegment, insertTemplate, putJourney } from "./fixtures.ts";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

const admin = () => bearer(t.workspace.adminKey);
const del = (path: string) => request(t.url, "DELETE", path, { headers: admin() });
const put = (path: string, body: Record<string, unknown>) => request(t.url, "PUT", path, { headers: admin(), body });
const emailTemplate = { type: "Email", from: "a@example.com", subject: "Hi", body: "Hello {{ user.id }}" };

/** entry segment → message (template, subscription group) → exit. */
const definition = (ids: { seg: string; tpl: string; grp?: string }) => ({
  entryNode: { type: "EntryNode", segment: ids.seg, child: "m" },
  nodes: [
    {
      id: "m",
      type: "MessageNode",
      channel: "Email",
      templateId: ids.tpl,
      ...(ids.grp ? { subscriptionGroupId: ids.grp } : {}),
      child: "ExitNode",
    },
  ],
  exitNode: { type: "ExitNode" },
});

async function resources() {
  const [seg, tpl, grp] = await Promise.all([
    insertSegment(t, t.workspace.id),
    insertTemplate(t, t.workspace.id),
    insertGroup(t, t.workspace.id),
  ]);
  return { seg, tpl, grp };
}

async function journey(ids: { seg: string; tpl: string; grp?: string }, status = "NotStarted") {
  const res = await putJourney(t, { definition: definition(ids), status });
  expect(res.status).toBe(200);
  return { id: res.body.id as string, name: res.body.name as string };
}

const nameOf = async (path: string, id: string) => (await request(t.url, "GET", `${path}/${id}`, { headers: admin() })).body.name as string;

describe("a running journey's resources", () => {
  it("cannot be deleted (409 naming the journey); once it is paused they can (204)", async () => {
    const ids = await resources();
    const j = await journey(ids, "Running");
    const paths = [
      `/api/admin/segments/${ids.seg}`,
      `/api/admin/content/templates/${ids.tpl}`,
      `/api/admin/subscription-groups/${ids.grp}`,
    ];
    for (const path of paths) {
      const res = await del(path);
      expect(res.status, path).toBe(409);
      expect(res.body.error.code).toBe("CONFLICT");
      expect(res.body.error.message, path).toContain(`is used by running journey(s): ${j.name}`);
    }
    expect((await putJourney(t, { id: j.id, name: j.name, status: "Paused" })).status).toBe(200);
    for (const path of paths) expect((await del(path)).status, path).toBe(204);
  });

  it("cannot be changed into something the journey cannot send: 409 naming the journey, nothing changed", async () => {
    const ids = await resources();
    const j = await journey(ids, "Running");
    const tplName = await nameOf("/api/admin/content/templates", ids.tpl);
    const grpName = await nameOf("/api/admin/subscription-groups", ids.grp);
    const cases: [string, string, Record<string, unknown>, string][] = [
      [
        "a template's channel",
        "/api/admin/content/templates",
        { id: ids.tpl, name: tplName, definition: { type: "Sms", body: "Hi" } },
        `Template "${tplName}" is used by running journey(s): ${j.name}; its channel cannot change from Email to Sms while they run`,
      ],
      [
        "a template's definition removed",
        "/api/admin/content/templates",
        { id: ids.tpl, name: tplName, definition: null, draft: emailTemplate },
        `Template "${tplName}" is used by running journey(s): ${j.name}; its definition cannot be removed while they run`,
      ],
      [
        "a subscription group's channel",
        "/api/admin/subscription-groups",
        { id: ids.grp, name: grpName, channel: "Sms", type: "OptOut" },
        `Subscription group "${grpName}" is used by running journey(s): ${j.name}; its channel cannot change from Email to Sms while they run`,
      ],
    ];
    for (const [what, path, body, message] of cases) {
      const res = await put(path, body);
      expect(res.status, what).toBe(409);
      expect(res.body.error).toMatchObject({ code: "CONFLICT", message });
    }
    const template = await t.ctx.db.prisma.messageTemplate.findUniqueOrThrow({
      where: { workspaceId_id: { workspaceId: t.workspace.id, id: ids.tpl } },
    });
    expect((template.definition as { type: string }).type).toBe("Email");
    expect((await t.ctx.db.prisma.subscriptionGroup.findFirstOrThrow({ where: { id: ids.grp } })).channel).toBe("Email");

    // What the journey can still send is fine: new content on the same channel, a renamed group, another type of group.
    const content = await put("/api/admin/content/templates", {
      id: ids.tpl,
      name: tplName,
      definition: { ...emailTemplate, subject: "Hello again" },
    });
    expect(content.status).toBe(200);
    expect(
      (await put("/api/admin/subscription-groups", { id: ids.grp, name: `${grpName}-renamed`, channel: "Email", type: "OptIn" })).status,
    ).toBe(200);

    // Paused, the journey holds nothing: the changes go through, and resuming says what no longer fits.
    expect((await putJourney(t, { id: j.id, name: j.name, status: "Paused" })).status).toBe(200);
    for (const [what, path, body] of cases.slice(1)) expect((await put(path, body)).status, what).toBe(200);
    const resumed = await putJourney(t, { id: j.id, name: j.name, status: "Running" });
    expect(resumed.status).toBe(400);
    expect(resumed.body.error.issues).toEqual([
      { path: "definition.nodes.0.templateId", message: expect.stringContaining("has no definition") },
      { path: "definition.nodes.0.subscriptionGroupId", message: expect.stringContaining("is for Sms; the node sends Email") },
    ]);
  });

  it("a journey does not start with a template that has only a draft (it would have nothing to send)", async () => {
    const ids = await resources();
    const draftOnly = await put("/api/admin/content/templates", { name: `draft-${randomUUID()}`, draft: emailTemplate });
    const res = await putJourney(t, { definition: definition({ ...ids, tpl: draftOnly.body.id }), status: "Running" });
    expect(res.status).toBe(400);
    expect(res.body.error.issues).toEqual([
      { path: "definition.nodes.0.templateId", message: expect.stringContaining("has no definition") },
    ]);
    // Not started, it may refer to a template still in the works.
    expect((await putJourney(t, { definition: definition({ ...ids, tpl: draftOnly.body.id }) })).status).toBe(200);
  });

  it("resources nobody running uses are deleted with 204, also those a journey not started names", async () => {
    const ids = await resources();
    await journey(ids, "NotStarted");
    expect((await del(`/api/admin/segments/${ids.seg}`)).status).toBe(204);
    expect((await del(`/api/admin/content/templates/${ids.tpl}`)).status).toBe(204);
    expect((await del(`/api/admin/subscription-groups/${ids.grp}`)).status).toBe(204);
    const lone = await resources();
    for (const path of [
      `/api/admin/segments/${lone.seg}`,
      `/api/admin/content/templates/${lone.tpl}`,
      `/api/admin/subscription-groups/${lone.grp}`,
    ]) {
      expect((await del(path)).status, path).toBe(204);
      expect((await del(path)).status, path).toBe(404);
    }
  });
});

describe("races between a start and a delete or a change", () => {
  const ROUNDS = 25;
  const later = <T>(ms: number, send: () => Promise<T>) => new Promise<T>((resolve) => setTimeout(() => resolve(send()), ms));

  it(`start a journey while its segment is deleted, ${ROUNDS} times: never a running journey whose segment is gone`, async () => {
    const outcomes: Record<string, number> = {};
    for (let round = 0; round < ROUNDS; round++) {
      const ids = await resources();
      const j = await journey(ids);
      // The start does more work before it reaches the segment than the delete: in odd rounds
      // the delete leaves a moment later, so both orders of arrival are tried.
      const [start, remove] = await Promise.all([
        putJourney(t, { id: j.id, name: j.name, status: "Running" }),
        later(round % 2, () => del(`/api/admin/segments/${ids.seg}`)),
      ]);
      const outcome = `start ${start.status}, delete ${remove.status}`;
      outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
      // Exactly one wins: a start then a refused delete, or a delete then a refused start.
      expect(["start 200, delete 409", "start 400, delete 204"], `round ${round}`).toContain(outcome);
      if (start.status === 200) expect(remove.body.error.message).toContain(j.name);
      else
        expect(start.body.error.issues).toEqual([
          { path: "definition.entryNode.segment", message: `no segment ${ids.seg} in this workspace` },
        ]);
      const stored = await t.ctx.db.prisma.journey.findFirstOrThrow({ where: { id: j.id } });
      const segment = await t.ctx.db.prisma.segment.findFirst({ where: { id: ids.seg } });
      expect(stored.status === "Running" && segment === null, `round ${round}: running journey without its segment`).toBe(false);
    }
    console.info(`start vs delete, ${ROUNDS} rounds:`, outcomes);
  });

  it(`start a journey while its template changes channel, ${ROUNDS} times: never a running journey that cannot send`, async () => {
    const outcomes: Record<string, number> = {};
    for (let round = 0; round < ROUNDS; round++) {
      const ids = await resources();
      const j = await journey(ids);
      const name = await nameOf("/api/admin/content/templates", ids.tpl);
      const [start, change] = await Promise.all([
        putJourney(t, { id: j.id, name: j.name, status: "Running" }),
        later(round % 2, () => put("/api/admin/content/templates", { id: ids.tpl, name, definition: { type: "Sms", body: "Hi" } })),
      ]);
      const outcome = `start ${start.status}, change ${change.status}`;
      outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
      expect(["start 200, change 409", "start 400, change 200"], `round ${round}`).toContain(outcome);
      const stored = await t.ctx.db.prisma.journey.findFirstOrThrow({ where: { id: j.id } });
      const template = await t.ctx.db.prisma.messageTemplate.findFirstOrThrow({ where: { id: ids.tpl } });
      expect(stored.status === "Running" && (template.definition as { type: string }).type !== "Email", `round ${round}`).toBe(false);
    }
    console.info(`start vs template change, ${ROUNDS} rounds:`, outcomes);
  });
});

describe("a segment holds the subscription groups it names", () => {
  it(`a segment linking a group while the group is deleted, ${10} times: never a segment naming a deleted group`, async () => {
    for (let round = 0; round < 10; round++) {
      const grp = await insertGroup(t, t.workspace.id);
      const name = `linked-${randomUUID()}`;
      const [link, remove] = await Promise.all([
        put("/api/admin/segments", { name, subscriptionGroupId: grp }),
        del(`/api/admin/subscription-groups/${grp}`),
      ]);
      expect(["link 200, delete 409", "link 400, delete 204"], `round ${round}`).toContain(`link ${link.status}, delete ${remove.status}`);
      if (link.status === 200) expect(remove.body.error.message).toContain(`is used by segment(s): ${name}`);
    }
  });

  it("deleting a segment releases what it held", async () => {
    const grp = await insertGroup(t, t.workspace.id);
    const seg = await put("/api/admin/segments", {
      name: `node-${randomUUID()}`,
      definition: { entryNode: { type: "SubscriptionGroup", id: "s", subscriptionGroupId: grp } },
    });
    expect(seg.status).toBe(200);
    expect((await del(`/api/admin/subscription-groups/${grp}`)).status).toBe(409);
    expect((await del(`/api/admin/segments/${seg.body.id}`)).status).toBe(204);
    expect((await del(`/api/admin/subscription-groups/${grp}`)).status).toBe(204);
  });
});
