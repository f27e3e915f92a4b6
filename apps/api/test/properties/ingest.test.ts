// Property: whatever JSON reaches an ingestion endpoint (identify/track/page/screen/group/alias and
// batch, under /api/public/apps and /v1), the answer is never a 5xx, and whatever a 2xx stored reads
// back through the admin API as a valid event record whose payload is itself a valid event, on a
// user profile the schema accepts.
import { BatchEvent, EventListResponse, UserListResponse, UserResource } from "@tidings/schema";
import fc from "fast-check";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createTestApp, type TestApp, type TestWorkspace } from "../support/app.ts";
import { basic, bearer, request } from "../support/http.ts";
import { hostile, numRuns, plainString } from "./arbitraries.ts";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

const KINDS = ["identify", "track", "page", "screen", "group", "alias"] as const;
type Kind = (typeof KINDS)[number];

// Valid values: the mutations make them hostile.
const id = fc.oneof(fc.constantFrom("u1", "u2", "anon-1"), plainString, fc.integer());
// Within ±15 years of now, so that skew correction (receivedAt − (sentAt − originalTimestamp)) stays in range.
const timestamp = fc.date({ min: new Date("2015-01-01"), max: new Date("2035-01-01"), noInvalidDate: true }).map((d) => d.toISOString());
const props = fc.dictionary(plainString, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });

/** A valid event of `kind`, `type` included when `typed`; a small pool of messageIds makes replays and duplicates. */
function validEvent(kind: Kind, typed: boolean) {
  const common = {
    ...(typed ? { type: fc.constant(kind) } : {}),
    userId: id,
    anonymousId: id,
    messageId: fc.oneof(fc.constantFrom("m-1", "m-2"), fc.uuid()),
    timestamp,
    originalTimestamp: timestamp,
    sentAt: timestamp,
    context: props,
    integrations: props,
  };
  const requiredKeys = ["userId", ...(typed ? ["type"] : [])];
  const shape: Record<string, fc.Arbitrary<unknown>> = { ...common };
  if (kind === "identify" || kind === "group") shape.traits = props;
  if (kind === "track") {
    shape.event = fc.oneof(fc.constantFrom("Signed Up", "Clicked"), plainString);
    shape.properties = props;
    requiredKeys.push("event");
  }
  if (kind === "page" || kind === "screen") {
    shape.name = fc.oneof(fc.constant("Home"), plainString);
    shape.category = plainString;
    shape.properties = props;
  }
  if (kind === "group") {
    shape.groupId = id;
    requiredKeys.push("groupId");
  }
  if (kind === "alias") {
    shape.previousId = id;
    requiredKeys.push("previousId");
  }
  return fc.record(shape, { requiredKeys });
}

const anyEvent = fc.constantFrom(...KINDS).chain((kind) => validEvent(kind, true));
const validBatch = fc.record(
  { batch: fc.array(anyEvent, { minLength: 1, maxLength: 6 }), context: props, integrations: props, sentAt: timestamp },
  { requiredKeys: ["batch"] },
);

/** Answers by status, so a test can check the generated bodies were not all refused. */
const statuses = new Map<number, number>();
/** A property whose bodies were nearly all refused would test little: a tenth at least are stored. */
const expectSomeAccepted = (runs: number) =>
  expect(statuses.get(204) ?? 0, JSON.stringify(Object.fromEntries(statuses))).toBeGreaterThan(runs / 10);

/** Asserts a non-5xx answer, and for a 2xx that everything the workspace now holds parses. */
async function checkAnswer(ws: TestWorkspace, res: { status: number; text: string }, input: unknown, onlyNamed = false) {
  statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
  expect(res.status, `${res.text}\n${JSON.stringify(input)?.slice(0, 2000)}`).toBeLessThan(500);
  if (res.status >= 300) return;
  expect(res.status).toBe(204);
  const events = await request(t.url, "GET", "/api/admin/events?limit=500", { headers: bearer(ws.adminKey) });
  expect(events.status, events.text).toBe(200);
  const list = EventListResponse.parse(events.body);
  expect(list.items.length).toBeGreaterThan(0);
  for (const ev of list.items) {
    // The payload as stored is an event the endpoints accept (type and messageId filled in).
    const again = BatchEvent.safeParse(ev.payload);
    expect(again.success, `stored payload ${JSON.stringify(ev.payload).slice(0, 2000)}: ${again.error?.message}`).toBe(true);
    expect(ev.payload.type).toBe(ev.type);
    expect(ev.payload.messageId).toBe(ev.messageId);
  }
  // Every profile the events made (or changed) reads back whole.
  const users = await request(t.url, "GET", "/api/admin/users?limit=500", { headers: bearer(ws.adminKey) });
  expect(users.status, users.text).toBe(200);
  const sent = JSON.stringify(input);
  for (const { userId } of UserListResponse.parse(users.body).items) {
    // A workspace shared across runs: the profiles this body names.
    if (onlyNamed && !sent.includes(JSON.stringify(userId).slice(1, -1))) continue;
    const user = await request(t.url, "GET", `/api/admin/users/${encodeURIComponent(userId)}`, { headers: bearer(ws.adminKey) });
    expect(user.status, user.text).toBe(200);
    expect(UserResource.safeParse(user.body).error).toBeUndefined();
  }
}

async function send(ws: TestWorkspace, path: string, body: unknown) {
  return request(t.url, "POST", path, {
    headers: { ...basic(ws.writeKey), "content-type": "application/json" },
    raw: JSON.stringify(body) ?? "null",
  });
}

describe("ingestion under generated hostile bodies", () => {
  beforeEach(() => statuses.clear());

  it("single-event endpoints: never a 5xx, never a stored event the schema rejects", async () => {
    const input = fc.record({
      prefix: fc.constantFrom("/api/public/apps", "/v1"),
      kind: fc.constantFrom(...KINDS),
      typed: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(
        input.chain(({ prefix, kind, typed }) =>
          fc.record({ path: fc.constant(`${prefix}/${kind}`), body: hostile(validEvent(kind, typed)) }),
        ),
        async ({ path, body }) => {
          const ws = await t.newWorkspace();
          await checkAnswer(ws, await send(ws, path, body), { path, body });
        },
      ),
      { numRuns: numRuns(80) },
    );
    expectSomeAccepted(numRuns(80));
  }, 120_000);

  it("batch endpoints: never a 5xx, never a stored event the schema rejects", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom("/api/public/apps/batch", "/v1/batch"), hostile(validBatch), async (path, body) => {
        const ws = await t.newWorkspace();
        await checkAnswer(ws, await send(ws, path, body), { path, body });
      }),
      { numRuns: numRuns(60) },
    );
    expectSomeAccepted(numRuns(60));
  }, 120_000);

  it("a replayed batch (same messageIds, mutated) is still never a 5xx", async () => {
    // One workspace for all runs: each body lands on what earlier ones stored (trait folds, aliases).
    const ws = await t.newWorkspace();
    await fc.assert(
      fc.asyncProperty(hostile(validBatch), async (body) => {
        await checkAnswer(ws, await send(ws, "/v1/batch", body), body, true);
      }),
      { numRuns: numRuns(30) },
    );
    expectSomeAccepted(numRuns(30));
  }, 120_000);
});
