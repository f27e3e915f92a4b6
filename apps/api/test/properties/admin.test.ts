// Property: whatever JSON reaches the admin upserts of segments, journeys and templates, and the
// template render preview, the answer is never a 5xx; after a 2xx the stored resource reads back
// through GET as a value its @tidings/schema resource schema accepts.
import {
  DEFINITION_INSTANT_RANGE,
  JourneyResource,
  MessageTemplateResource,
  RenderTemplateRequestBody,
  RenderTemplateResponse,
  SegmentResource,
  SegmentUsersResponse,
  UpsertJourneyRequestBody,
  UpsertMessageTemplateRequestBody,
  UpsertSegmentRequestBody,
  SEGMENT_DEFINITION_LIMITS,
} from "@tidings/schema";
import fc from "fast-check";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { z } from "zod";
import { draft, insertGroup, insertSegment, insertTemplate } from "../journeys/fixtures.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { basic, bearer, request } from "../support/http.ts";
import { hostile, numRuns, plainString } from "./arbitraries.ts";

let t: TestApp;
let segments: string[];
let templates: string[];
let group = "";
beforeAll(async () => {
  t = await createTestApp();
  const ws = t.workspace.id;
  segments = [await insertSegment(t, ws), await insertSegment(t, ws)];
  templates = [await insertTemplate(t, ws), await insertTemplate(t, ws)];
  group = await insertGroup(t, ws);
  const identified = await request(t.url, "POST", "/v1/identify", {
    headers: basic(t.workspace.writeKey),
    body: { userId: "u1", traits: { email: "u1@acme.test", plan: "pro", tags: ["a", "b"] } },
  });
  expect(identified.status).toBe(204);
});
afterAll(async () => {
  await t.close();
});

const admin = () => ({ ...bearer(t.workspace.adminKey), "content-type": "application/json" });

const statuses = new Map<number, number>();
beforeEach(() => statuses.clear());

/** A property whose bodies were nearly all refused would test little: a tenth at least succeed. */
const expectSomeAccepted = (runs: number) =>
  expect(statuses.get(200) ?? 0, JSON.stringify(Object.fromEntries(statuses))).toBeGreaterThan(runs / 10);

/** Sends `body`, asserts no 5xx, and after a 200 that GET of the stored resource parses with `schema`. */
async function upsertAndReadBack(path: string, body: unknown, schema: z.ZodType, after?: (id: string) => Promise<void>) {
  const res = await request(t.url, "PUT", path, { headers: admin(), raw: JSON.stringify(body) ?? "null" });
  statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
  expect(res.status, `${res.text}\n${JSON.stringify(body)?.slice(0, 3000)}`).toBeLessThan(500);
  if (res.status !== 200) return;
  const got = await request(t.url, "GET", `${path}/${res.body.id}`, { headers: admin() });
  expect(got.status, got.text).toBe(200);
  const parsed = schema.safeParse(got.body);
  expect(parsed.error, JSON.stringify(got.body).slice(0, 3000)).toBeUndefined();
  await after?.(res.body.id);
}

const name = fc.oneof(
  fc.uuid().map((u) => `n-${u}`),
  plainString.filter((s) => s.trim() !== ""),
);
const seconds = fc.integer({ min: 1, max: 10 * 365 * 24 * 3600 });
const scalar = fc.oneof(plainString, fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean());

// --- Segments --------------------------------------------------------------------------------

const operator = fc.oneof(
  fc.record({ type: fc.constantFrom("Equals", "NotEquals"), value: scalar }),
  fc.record({ type: fc.constantFrom("Exists", "NotExists") }),
  fc.record({
    type: fc.constantFrom("GreaterThanOrEqual", "LessThan", "GreaterThan", "LessThanOrEqual"),
    value: fc.double({ noNaN: true, noDefaultInfinity: true }),
  }),
  fc.record({ type: fc.constant("Within"), windowSeconds: seconds }),
  fc.record({
    type: fc.constant("AbsoluteTimestamp"),
    absoluteTimestamp: fc.integer({ min: DEFINITION_INSTANT_RANGE.min, max: DEFINITION_INSTANT_RANGE.max }),
    direction: fc.constantFrom("after", "before"),
  }),
);
const hasBeen = fc.record({
  type: fc.constant("HasBeen"),
  comparator: fc.constantFrom("GTE", "LT"),
  value: scalar,
  windowSeconds: seconds,
});
const propertyCondition = fc.record({ path: plainString, operator });

/** A leaf condition with id `id`. */
const leaf = (id: string) =>
  fc.oneof(
    fc.record({ type: fc.constant("Trait"), id: fc.constant(id), path: plainString, operator: fc.oneof(operator, hasBeen) }),
    fc.record(
      {
        type: fc.constant("Performed"),
        id: fc.constant(id),
        event: plainString,
        times: fc.nat({ max: SEGMENT_DEFINITION_LIMITS.times }),
        timesOperator: fc.constantFrom("=", ">=", "<"),
        withinSeconds: seconds,
        properties: fc.array(propertyCondition, { maxLength: 2 }),
      },
      { requiredKeys: ["type", "id", "event"] },
    ),
    fc.record(
      {
        type: fc.constant("LastPerformed"),
        id: fc.constant(id),
        event: plainString,
        whereProperties: fc.array(propertyCondition, { maxLength: 2 }),
        hasProperties: fc.array(propertyCondition, { maxLength: 2 }),
      },
      { requiredKeys: ["type", "id", "event"] },
    ),
    fc.constantFrom({ type: "Everyone", id }, { type: "Manual", id }),
    fc.record({ type: fc.constant("RandomBucket"), id: fc.constant(id), percent: fc.double({ min: 0, max: 1, noNaN: true }) }),
    fc.constant(null).map(() => ({ type: "SubscriptionGroup", id, subscriptionGroupId: group })),
  );

/** Leaves n0…nk, then And/Or/Not nodes over earlier nodes; the last node is the entry. */
const segmentDefinition = fc.tuple(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 0, max: 3 })).chain(([leaves, composites]) => {
  const ids = Array.from({ length: leaves + composites }, (_, i) => `n${i}`);
  const nodes = ids.map((id, i) => {
    if (i < leaves) return leaf(id);
    const earlier = ids.slice(0, i);
    return fc.oneof(
      fc.record({
        type: fc.constantFrom("And", "Or"),
        id: fc.constant(id),
        children: fc.uniqueArray(fc.constantFrom(...earlier), { minLength: 1 }),
      }),
      fc.record({ type: fc.constant("Not"), id: fc.constant(id), child: fc.constantFrom(...earlier) }),
    );
  });
  return fc.tuple(...nodes).map((all) => ({ entryNode: all[all.length - 1], nodes: all.slice(0, -1) }));
});

const segmentBody = fc.record(
  { name, definition: segmentDefinition, subscriptionGroupId: fc.option(fc.constant(null).map(() => group)) },
  { requiredKeys: ["name"] },
);

// --- Templates -------------------------------------------------------------------------------

/** Liquid that parses: text, output with filters, and balanced tags. */
const goodLiquid = fc.constantFrom(
  "{{ user.id }}",
  "{{ user.email | upcase }}",
  "{{ event.properties.plan | default: 'x' }}",
  "{% if user.plan == 'pro' %}Pro{% else %}Free{% endif %}",
  "{% for i in (1..3) %}{{ i }}{% endfor %}",
  "{% assign x = user.id | append: '!' %}{{ x }}",
  "{{ unsubscribe_url }}",
  "{% raw %}{{ not liquid }}{% endraw %}",
  "{% capture c %}{{ user.name }}{% endcapture %}{{ c | size }}",
  "{% liquid echo user.id %}",
  "{{ user['id'] }}",
  "{{ 'now' | date: '%Y' }}",
  "{{ 1 | divided_by: 0 }}",
  "{{ user.tags | join: ', ' }}",
);
/** Pieces that break a template: unclosed tags, unknown filters and tags, includes. */
const badLiquid = fc.constantFrom(
  "{{",
  "}}",
  "{%",
  "%}",
  "{% if x %}",
  "{% endfor %}",
  "{% raw %}",
  "{% include 'x' %}",
  "{% render 'x' %}",
  "{% layout 'x' %}",
  "{{ 'a' | nope }}",
  "{% nope %}",
  "{{ user.id | date: }}",
);
/** Template text: mostly Liquid that parses; now and then with a piece that does not. */
const liquidText = fc
  .oneof(
    { weight: 5, arbitrary: fc.array(fc.oneof(plainString, goodLiquid), { maxLength: 5 }) },
    { weight: 1, arbitrary: fc.array(fc.oneof(plainString, goodLiquid, badLiquid), { maxLength: 5 }) },
  )
  .map((parts) => parts.join(""));
const liquidMap = fc.dictionary(
  plainString.filter((k) => k.length <= 200),
  liquidText,
  { maxKeys: 3 },
);

const templateDefinition = fc.oneof(
  fc.record(
    {
      type: fc.constant("Email"),
      from: fc.oneof(fc.constant("Acme <a@acme.test>"), liquidText),
      subject: liquidText,
      body: liquidText,
      replyTo: liquidText,
      cc: liquidText,
      bcc: liquidText,
      headers: liquidMap,
    },
    { requiredKeys: ["type", "from", "subject", "body"] },
  ),
  fc.record({ type: fc.constant("Sms"), body: liquidText }),
  fc.record(
    { type: fc.constant("MobilePush"), title: liquidText, body: liquidText, imageUrl: liquidText, data: liquidMap },
    { requiredKeys: ["type", "title", "body"] },
  ),
  fc.record(
    {
      type: fc.constant("Webhook"),
      url: fc.oneof(fc.constantFrom("https://hooks.example.com/x", "http://127.0.0.1/x", "https://{{ user.id }}.example.com"), liquidText),
      method: fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE"),
      headers: liquidMap,
      body: liquidText,
    },
    { requiredKeys: ["type", "url", "method"] },
  ),
);

const templateBody = fc.record(
  { name, definition: fc.option(templateDefinition), draft: fc.option(templateDefinition) },
  { requiredKeys: ["name"] },
);

const traits = fc.dictionary(plainString, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
const renderBody = fc.oneof(
  fc.record(
    {
      definition: templateDefinition,
      user: fc.tuple(fc.oneof(fc.constant("u1"), plainString), traits).map(([id, tr]) => ({ ...tr, id })),
      event: traits,
      subscriptionGroupId: fc.constant(null).map(() => group),
    },
    { requiredKeys: ["definition", "user"] },
  ),
  // A stored user (u1, identified in beforeAll), or one nobody knows (404), looked up by id.
  fc.record({ definition: templateDefinition, userId: fc.oneof(fc.constant("u1"), plainString) }),
);

// --- Journeys --------------------------------------------------------------------------------

// Drawn lazily: the resources are made in beforeAll, after the generators are built.
const segmentId = () => fc.integer({ min: 0, max: 1 }).map((i) => segments[i]!);
const templateId = () => fc.integer({ min: 0, max: 1 }).map((i) => templates[i]!);

/** entry → delay → split (true: message, false: straight on) → exit, each field drawn. */
const journeyDraft = fc
  .record({
    entry: fc.oneof(
      segmentId().map((segment) => ({ type: "EntryNode", segment })),
      plainString.map((event) => ({ type: "EventEntryNode", event })),
    ),
    delay: fc.oneof(
      seconds.map((s) => ({ type: "Second", seconds: s })),
      fc.record({ type: fc.constant("LocalTime"), hour: fc.integer({ min: 0, max: 23 }), minute: fc.integer({ min: 0, max: 59 }) }),
      fc.record({ type: fc.constant("UserProperty"), userProperty: plainString, offsetSeconds: fc.integer({ min: -86400, max: 86400 }) }),
    ),
    split: segmentId(),
    template: templateId(),
    position: fc.record({ x: fc.double({ noNaN: true, noDefaultInfinity: true }), y: fc.integer() }),
  })
  .map(({ entry, delay, split, template, position }) => {
    const d = draft({ entry, delay, splitSegment: split, templateId: template });
    d.nodes[0] = { ...d.nodes[0], position };
    return { ...d, viewport: { zoom: 1 } };
  });

const journeyDefinition = fc
  .record({ segment: segmentId(), template: templateId(), group: fc.option(fc.constant(null).map(() => group)), wait: seconds })
  .map(({ segment, template, group: g, wait }) => ({
    entryNode: { type: "EntryNode", segment, child: "w" },
    nodes: [
      { id: "w", type: "DelayNode", variant: { type: "Second", seconds: wait }, child: "m" },
      { id: "m", type: "MessageNode", channel: "Email", templateId: template, ...(g ? { subscriptionGroupId: g } : {}), child: "ExitNode" },
    ],
    exitNode: { type: "ExitNode" },
  }));

const journeyBody = fc.oneof(
  fc.record(
    { name, draft: journeyDraft, canRunMultiple: fc.boolean(), exitSegmentId: fc.option(segmentId()) },
    { requiredKeys: ["name", "draft"] },
  ),
  fc.record({ name, definition: journeyDefinition, draft: journeyDraft }, { requiredKeys: ["name", "definition"] }),
);

// --- Properties ------------------------------------------------------------------------------

describe("the generators", () => {
  // Mutations start from valid bodies; a generator of invalid ones would hide the interesting cases.
  it.each([
    ["segment", () => segmentBody, UpsertSegmentRequestBody],
    ["journey", () => journeyBody, UpsertJourneyRequestBody],
    ["template", () => templateBody, UpsertMessageTemplateRequestBody],
    ["render", () => renderBody, RenderTemplateRequestBody],
  ] as const)("%s bodies pass the request schema", (_what, arb, schema) => {
    fc.assert(
      fc.property(arb() as fc.Arbitrary<unknown>, (body) => {
        expect(schema.safeParse(body).error).toBeUndefined();
      }),
      { numRuns: 300 },
    );
  });
});

describe("admin bodies under generated hostile input", () => {
  it("PUT /api/admin/segments: never a 5xx; a stored segment reads back valid, its members list too", async () => {
    const runs = numRuns(60);
    await fc.assert(
      fc.asyncProperty(hostile(segmentBody), (body) =>
        upsertAndReadBack("/api/admin/segments", body, SegmentResource, async (id) => {
          const users = await request(t.url, "GET", `/api/admin/segments/${id}/users`, { headers: admin() });
          expect(users.status, users.text).toBe(200);
          expect(SegmentUsersResponse.safeParse(users.body).error).toBeUndefined();
        }),
      ),
      { numRuns: runs },
    );
    expectSomeAccepted(runs);
  }, 120_000);

  it("PUT /api/admin/journeys: never a 5xx; a stored journey (draft compiled or not) reads back valid", async () => {
    const runs = numRuns(60);
    await fc.assert(
      fc.asyncProperty(hostile(journeyBody), (body) => upsertAndReadBack("/api/admin/journeys", body, JourneyResource)),
      { numRuns: runs },
    );
    expectSomeAccepted(runs);
  }, 120_000);

  it("PUT /api/admin/content/templates: never a 5xx; a stored template reads back valid", async () => {
    const runs = numRuns(60);
    await fc.assert(
      fc.asyncProperty(hostile(templateBody), (body) => upsertAndReadBack("/api/admin/content/templates", body, MessageTemplateResource)),
      { numRuns: runs },
    );
    expectSomeAccepted(runs);
  }, 120_000);

  it("POST /api/admin/content/templates/render: never a 5xx; a 200 is a valid render response", async () => {
    const runs = numRuns(60);
    await fc.assert(
      fc.asyncProperty(hostile(renderBody), async (body) => {
        const res = await request(t.url, "POST", "/api/admin/content/templates/render", {
          headers: admin(),
          raw: JSON.stringify(body) ?? "null",
        });
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        expect(res.status, `${res.text}\n${JSON.stringify(body)?.slice(0, 3000)}`).toBeLessThan(500);
        if (res.status === 200) expect(RenderTemplateResponse.safeParse(res.body).error).toBeUndefined();
      }),
      { numRuns: runs },
    );
    expectSomeAccepted(runs);
  }, 120_000);
});
