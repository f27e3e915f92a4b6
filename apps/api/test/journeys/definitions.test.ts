// Draft compilation and definition validation through PUT /api/admin/journeys.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../support/app.ts";
import { bearer, request } from "../support/http.ts";
import {
  edge,
  emptyNode,
  fullDraft,
  insertGroup,
  insertSegment,
  insertTemplate,
  labelNode,
  putJourney,
  simpleDefinition,
  uiNode,
} from "./fixtures.ts";

let t: TestApp;
let seg: string;
let vip: string;
let tpl: string;
beforeAll(async () => {
  t = await createTestApp();
  [seg, vip, tpl] = await Promise.all([
    insertSegment(t, t.workspace.id),
    insertSegment(t, t.workspace.id),
    insertTemplate(t, t.workspace.id),
  ]);
});
afterAll(async () => {
  await t.close();
});

const issue = (path: string, message: string | RegExp) => ({
  path,
  message: typeof message === "string" ? expect.stringContaining(message) : expect.stringMatching(message),
});

/** entry on an event → wait-for → random cohort → LocalTime / UserProperty delays → exit. */
const waitAndCohortDraft = () => ({
  nodes: [
    uiNode("in", { type: "EntryUiNode", variant: { type: "EventEntryNode", event: "Signed Up" } }),
    uiNode("wait", {
      type: "WaitForNode",
      timeoutSeconds: 600,
      timeoutLabelNodeId: "wait-timeout",
      segmentChildren: [{ labelNodeId: "wait-in", segmentId: vip }],
    }),
    labelNode("wait-in", "in segment"),
    labelNode("wait-timeout", "timed out"),
    uiNode("ab", {
      type: "RandomCohortNode",
      cohortChildren: [
        { labelNodeId: "ab-a", percent: 25, name: "A" },
        { labelNodeId: "ab-b", percent: 75, name: "B" },
      ],
    }),
    labelNode("ab-a", "A"),
    labelNode("ab-b", "B"),
    uiNode("morning", { type: "DelayNode", variant: { type: "LocalTime", hour: 9 } }),
    uiNode("before", { type: "DelayNode", variant: { type: "UserProperty", userProperty: "trial.endsAt", offsetSeconds: -86400 } }),
    uiNode("out", { type: "ExitNode" }),
  ],
  edges: [
    edge("in", "wait"),
    edge("wait-in", "ab"),
    edge("wait-timeout", "out"),
    edge("ab-a", "morning"),
    edge("ab-b", "before"),
    edge("morning", "out"),
    edge("before", "out"),
  ],
});

/** What a graph editor keeps next to the draft's own fields, added to every object at every level. */
function withEditorState<T>(value: T, depth = 0): T {
  if (Array.isArray(value)) return value.map((v) => withEditorState(v, depth + 1)) as T;
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = withEditorState(v, depth + 1);
  out[`editor${depth}`] = { position: { x: depth * 40, y: -12.5 }, width: 180, selected: depth % 2 === 0, label: null };
  return out as T;
}

describe("compiling a draft", () => {
  it("compiles entry → delay → segment split → message → exit into the definition", async () => {
    const draft = fullDraft({ entrySegment: seg, splitSegment: vip, templateId: tpl });
    const res = await putJourney(t, { draft });
    expect(res.status).toBe(200);
    expect(res.body.draft).toEqual(draft);
    expect(res.body.definition).toEqual({
      entryNode: { type: "EntryNode", segment: seg, child: "delay-1" },
      nodes: [
        { id: "delay-1", type: "DelayNode", variant: { type: "Second", seconds: 3600 }, child: "split-1" },
        { id: "split-1", type: "SegmentSplitNode", name: "Is VIP?", segment: vip, trueChild: "msg-1", falseChild: "ExitNode" },
        { id: "msg-1", type: "MessageNode", name: "Welcome", channel: "Email", templateId: tpl, child: "ExitNode" },
      ],
      exitNode: { type: "ExitNode", id: "ExitNode" },
    });
    const started = await putJourney(t, { id: res.body.id, name: res.body.name, status: "Running" });
    expect(started.body.status).toBe("Running");
  });

  it("compiles wait-for, random-cohort, event entry and the other delays", async () => {
    const draft = waitAndCohortDraft();
    const res = await putJourney(t, { draft });
    expect(res.status).toBe(200);
    expect(res.body.definition).toEqual({
      entryNode: { type: "EventEntryNode", event: "Signed Up", child: "wait" },
      nodes: [
        {
          id: "wait",
          type: "WaitForNode",
          segmentChildren: [{ segmentId: vip, child: "ab" }],
          timeoutSeconds: 600,
          timeoutChild: "ExitNode",
        },
        {
          id: "ab",
          type: "RandomCohortNode",
          children: [
            { percent: 25, child: "morning", name: "A" },
            { percent: 75, child: "before", name: "B" },
          ],
        },
        { id: "morning", type: "DelayNode", variant: { type: "LocalTime", hour: 9, minute: 0 }, child: "ExitNode" },
        {
          id: "before",
          type: "DelayNode",
          variant: { type: "UserProperty", userProperty: "trial.endsAt", offsetSeconds: -86400 },
          child: "ExitNode",
        },
      ],
      exitNode: { type: "ExitNode", id: "ExitNode" },
    });
  });

  it("keeps editor state at every level of the draft: PUT then GET return it untouched; the definition never sees it", async () => {
    const plain = fullDraft({ entrySegment: seg, splitSegment: vip, templateId: tpl });
    const draft = withEditorState({ ...plain, nodes: [...plain.nodes, ...waitAndCohortDraft().nodes.slice(1, -1)] });
    // The wait/cohort steps dangle (no edges): the draft is stored as is, without a definition.
    const incomplete = await putJourney(t, { draft });
    expect(incomplete.status, JSON.stringify(incomplete.body)).toBe(200);
    expect(incomplete.body.draft).toEqual(draft);
    const got = await request(t.url, "GET", `/api/admin/journeys/${incomplete.body.id}`, { headers: bearer(t.workspace.adminKey) });
    expect(got.body.draft).toEqual(draft);

    // A complete draft decorated the same way compiles to exactly the definition of the plain one.
    const complete = withEditorState(waitAndCohortDraft());
    const res = await putJourney(t, { draft: complete });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const again = await request(t.url, "GET", `/api/admin/journeys/${res.body.id}`, { headers: bearer(t.workspace.adminKey) });
    expect(again.body.draft).toEqual(complete);
    const reference = await putJourney(t, { draft: waitAndCohortDraft() });
    expect(again.body.definition).toEqual(reference.body.definition);
    expect(JSON.stringify(again.body.definition)).not.toContain("editor");
  });

  it("stores an incomplete draft without a definition", async () => {
    const draft = fullDraft({ entrySegment: seg, splitSegment: vip, templateId: tpl });
    delete (draft.nodes[5]!.data as unknown as { nodeTypeProps: { templateId?: string } }).nodeTypeProps.templateId;
    const res = await putJourney(t, { draft });
    expect(res.status).toBe(200);
    expect(res.body.definition).toBeUndefined();
    const start = await putJourney(t, { id: res.body.id, name: res.body.name, status: "Running" });
    expect(start.status).toBe(400);
    expect(start.body.error.issues).toEqual([issue("draft.nodes.5.data.nodeTypeProps.templateId", "not filled in")]);
  });

  it("refuses a contradictory draft: two ways on from one step, a second entry node", async () => {
    const draft = fullDraft({ entrySegment: seg, splitSegment: vip, templateId: tpl });
    draft.edges.push(edge("delay-1", "msg-1"));
    draft.nodes.push(uiNode("EntryNode-2", { type: "EntryUiNode", variant: { type: "EntryNode", segment: seg } }));
    const res = await putJourney(t, { draft });
    expect(res.status).toBe(400);
    expect(res.body.error.issues).toEqual(
      expect.arrayContaining([issue("draft.nodes.1", "2 outgoing edges"), issue("draft.nodes.8", "a second entry node")]),
    );
  });

  it("names problems of a compiled draft by their draft path", async () => {
    const draft = fullDraft({ entrySegment: seg, splitSegment: randomUUID(), templateId: tpl });
    const res = await putJourney(t, { draft });
    expect(res.status).toBe(400);
    expect(res.body.error.issues).toEqual([issue("draft.nodes.2.data.nodeTypeProps.segmentId", "no segment")]);

    const looped = fullDraft({ entrySegment: seg, splitSegment: vip, templateId: tpl });
    looped.edges = looped.edges.map((e) => (e.source === "msg-1" ? edge("msg-1", "delay-1") : e));
    const cycle = await putJourney(t, { draft: looped });
    expect(cycle.status).toBe(400);
    expect(cycle.body.error.issues).toEqual([issue("draft.nodes.5", "closes a cycle")]);
  });
});

describe("compiling each kind of step", () => {
  const props = (i: number, field: string) => `draft.nodes.${i}.data.nodeTypeProps.${field}`;

  it("wait-for on several segments, a message's subscription group, the entry's own child, delay defaults", async () => {
    const group = await insertGroup(t, t.workspace.id);
    const draft = {
      nodes: [
        // No outgoing edge: the entry's `child` says where to go.
        uiNode("in", { type: "EntryUiNode", variant: { type: "EntryNode", segment: seg, child: "wait" } }),
        uiNode("wait", {
          type: "WaitForNode",
          name: "VIP or not",
          timeoutSeconds: 60,
          timeoutLabelNodeId: "wait-timeout",
          segmentChildren: [
            { labelNodeId: "wait-vip", segmentId: vip },
            { labelNodeId: "wait-seg", segmentId: seg },
          ],
        }),
        labelNode("wait-vip", "VIP"),
        labelNode("wait-seg", "member"),
        labelNode("wait-timeout", "timed out"),
        uiNode("msg", { type: "MessageNode", channel: "Email", templateId: tpl, subscriptionGroupId: group }),
        uiNode("msg-2", { type: "MessageNode", channel: "Email", templateId: tpl, subscriptionGroupId: "" }),
        uiNode("renewal", { type: "DelayNode", variant: { type: "UserProperty", userProperty: "plan.renewsAt" } }),
        uiNode("pause", { type: "DelayNode", variant: { type: "Second", seconds: 30, unit: "minutes" } }),
        uiNode("out", { type: "ExitNode" }),
      ],
      edges: [
        edge("wait-vip", "msg"),
        edge("msg", "renewal"),
        edge("renewal", "out"),
        edge("wait-seg", "msg-2"),
        edge("msg-2", "pause"),
        edge("pause", "out"),
        edge("wait-timeout", "out"),
      ],
    };
    const res = await putJourney(t, { draft });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.definition).toEqual({
      entryNode: { type: "EntryNode", segment: seg, child: "wait" },
      nodes: [
        {
          id: "wait",
          type: "WaitForNode",
          name: "VIP or not",
          segmentChildren: [
            { segmentId: vip, child: "msg" },
            { segmentId: seg, child: "msg-2" },
          ],
          timeoutSeconds: 60,
          timeoutChild: "ExitNode",
        },
        { id: "msg", type: "MessageNode", channel: "Email", templateId: tpl, subscriptionGroupId: group, child: "renewal" },
        { id: "msg-2", type: "MessageNode", channel: "Email", templateId: tpl, child: "pause" },
        {
          id: "renewal",
          type: "DelayNode",
          variant: { type: "UserProperty", userProperty: "plan.renewsAt", offsetSeconds: 0 },
          child: "ExitNode",
        },
        { id: "pause", type: "DelayNode", variant: { type: "Second", seconds: 30 }, child: "ExitNode" },
      ],
      exitNode: { type: "ExitNode", id: "ExitNode" },
    });
  });

  it("says everything an incomplete draft still lacks, step by step, in draft order", async () => {
    const draft = {
      nodes: [
        uiNode("in", { type: "EntryUiNode", variant: { type: "EventEntryNode", event: "" } }),
        uiNode("wait", { type: "WaitForNode", timeoutLabelNodeId: "nowhere", segmentChildren: [] }),
        uiNode("ab", { type: "RandomCohortNode", cohortChildren: [] }),
        uiNode("split", { type: "SegmentSplitNode", segmentId: vip, trueLabelNodeId: "t", falseLabelNodeId: "f" }),
        labelNode("t", "true"),
        labelNode("f", "false"),
        uiNode("later", { type: "DelayNode", variant: { type: "LocalTime", minute: 30 } }),
        uiNode("out", { type: "ExitNode" }),
      ],
      edges: [edge("f", "out")],
    };
    const res = await putJourney(t, { draft, status: "Running" });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain("the draft is incomplete");
    expect(res.body.error.issues).toEqual([
      { path: "draft.nodes.0", message: "has no outgoing edge" },
      { path: props(0, "variant.event"), message: "not filled in yet" },
      { path: props(1, "segmentChildren"), message: "no segment to wait for yet" },
      { path: props(1, "timeoutSeconds"), message: "not filled in yet" },
      { path: props(1, "timeoutLabelNodeId"), message: 'leads to "nowhere", which is not a node of the draft' },
      { path: props(2, "cohortChildren"), message: "no branch yet" },
      { path: "draft.nodes.4", message: "has no outgoing edge" },
      { path: props(6, "variant.hour"), message: "not filled in yet" },
      { path: "draft.nodes.6", message: "has no outgoing edge" },
    ]);
  });

  it("refuses duplicate ids, a second exit, edges looping through empty nodes and a way back to the entry", async () => {
    const draft = {
      nodes: [
        uiNode("in", { type: "EntryUiNode", variant: { type: "EntryNode", segment: seg } }),
        emptyNode("j1"),
        emptyNode("j2"),
        uiNode("d", { type: "DelayNode", variant: { type: "Second", seconds: 5 } }),
        labelNode("back", "again"),
        uiNode("d", { type: "DelayNode", variant: { type: "Second", seconds: 6 } }),
        uiNode("out", { type: "ExitNode" }),
        uiNode("out-2", { type: "ExitNode" }),
      ],
      edges: [edge("in", "j1"), edge("j1", "j2"), edge("j2", "j1"), edge("d", "back"), edge("back", "in")],
    };
    const res = await putJourney(t, { draft });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toBe("The journey draft is invalid");
    expect(res.body.error.issues).toEqual([
      { path: "draft.nodes.5.id", message: 'duplicate node id "d" (also draft.nodes.3)' },
      { path: "draft.nodes.7", message: "a second exit node (ExitNode)" },
      { path: "draft.nodes.1", message: "edges loop through label/empty nodes without reaching a step" },
      { path: "draft.nodes.3", message: "leads back to the entry node" },
    ]);
  });

  it("names definition problems of wait-for and random-cohort steps by their draft fields", async () => {
    const draft = (cohort: number[], wait: { timeoutSeconds: number; segmentId: string }) => ({
      nodes: [
        uiNode("in", { type: "EntryUiNode", variant: { type: "EventEntryNode", event: "Paid" } }),
        uiNode("wait", {
          type: "WaitForNode",
          timeoutSeconds: wait.timeoutSeconds,
          timeoutLabelNodeId: "wait-timeout",
          segmentChildren: [{ labelNodeId: "wait-in", segmentId: wait.segmentId }],
        }),
        labelNode("wait-in", "in"),
        labelNode("wait-timeout", "timed out"),
        uiNode("ab", { type: "RandomCohortNode", cohortChildren: cohort.map((percent, k) => ({ labelNodeId: `ab-${k}`, percent })) }),
        ...cohort.map((_, k) => labelNode(`ab-${k}`, `cohort ${k}`)),
        uiNode("out", { type: "ExitNode" }),
      ],
      edges: [edge("in", "wait"), edge("wait-in", "ab"), edge("wait-timeout", "out"), ...cohort.map((_, k) => edge(`ab-${k}`, "out"))],
    });
    const percents = await putJourney(t, { draft: draft([60, 30], { timeoutSeconds: 60, segmentId: vip }) });
    expect(percents.status).toBe(400);
    expect(percents.body.error.issues).toEqual([issue(props(4, "cohortChildren"), "percents add up to 90, not 100")]);

    const waiting = await putJourney(t, { draft: draft([100], { timeoutSeconds: 0, segmentId: "not-a-uuid" }) });
    expect(waiting.status).toBe(400);
    expect(waiting.body.error.issues).toEqual([
      issue(props(1, "segmentChildren.0.segmentId"), /uuid/i),
      issue(props(1, "timeoutSeconds"), ">0"),
    ]);
  });
});

describe("validating a definition", () => {
  const body = (def: Record<string, unknown>) => ({ definition: def });
  const base = () => simpleDefinition(seg, tpl);

  const cases: [string, () => Record<string, unknown> | Promise<Record<string, unknown>>, { path: string; message: string }[]][] = [
    [
      "a child naming no node",
      () => ({ ...base(), nodes: [{ ...base().nodes[0], child: "nowhere" }] }),
      [issue("definition.nodes.0.child", 'names no node of the definition: "nowhere"')],
    ],
    [
      "a cycle",
      () => ({
        ...base(),
        nodes: [
          { id: "m", type: "MessageNode", channel: "Email", templateId: tpl, child: "d" },
          { id: "d", type: "DelayNode", variant: { type: "Second", seconds: 5 }, child: "m" },
        ],
      }),
      [issue("definition.nodes.1.child", 'going back to "m" closes a cycle')],
    ],
    [
      "a node the entry cannot reach",
      () => ({
        ...base(),
        nodes: [...base().nodes, { id: "lost", type: "DelayNode", variant: { type: "Second", seconds: 1 }, child: "ExitNode" }],
      }),
      [issue("definition.nodes.1", 'node "lost" cannot be reached')],
    ],
    [
      "duplicate node ids and the reserved ExitNode id",
      () => ({ ...base(), nodes: [base().nodes[0], base().nodes[0], { ...base().nodes[0], id: "ExitNode" }] }),
      [issue("definition.nodes.1.id", 'duplicate node id "m"'), issue("definition.nodes.2.id", "reserved")],
    ],
    [
      "cohort percents not adding up to 100",
      () => ({
        ...base(),
        entryNode: { type: "EntryNode", segment: seg, child: "ab" },
        nodes: [
          {
            id: "ab",
            type: "RandomCohortNode",
            children: [
              { percent: 60, child: "ExitNode" },
              { percent: 30, child: "ExitNode" },
            ],
          },
        ],
      }),
      [issue("definition.nodes.0.children", "percents add up to 90, not 100")],
    ],
    [
      "an unknown entry segment",
      () => ({ ...base(), entryNode: { type: "EntryNode", segment: "0b7e6bb0-5c2f-4e43-9d55-1f1f1f1f1f1f", child: "m" } }),
      [issue("definition.entryNode.segment", "no segment 0b7e6bb0-5c2f-4e43-9d55-1f1f1f1f1f1f in this workspace")],
    ],
    ["an unknown template", () => simpleDefinition(seg, randomUUID()), [issue("definition.nodes.0.templateId", "no message template")]],
    [
      "a template of another workspace",
      async () => simpleDefinition(seg, await insertTemplate(t, (await t.newWorkspace()).id)),
      [issue("definition.nodes.0.templateId", "no message template")],
    ],
    [
      "a template of another channel",
      async () => ({ ...base(), nodes: [{ ...base().nodes[0], templateId: await insertTemplate(t, t.workspace.id, "Sms") }] }),
      [issue("definition.nodes.0.templateId", "is a Sms template; the node sends Email")],
    ],
    [
      "an unknown or other-channel subscription group",
      async () => ({
        ...base(),
        entryNode: { type: "EntryNode", segment: seg, child: "m1" },
        nodes: [
          { id: "m1", type: "MessageNode", channel: "Email", templateId: tpl, subscriptionGroupId: randomUUID(), child: "m2" },
          {
            id: "m2",
            type: "MessageNode",
            channel: "Email",
            templateId: tpl,
            subscriptionGroupId: await insertGroup(t, t.workspace.id, "Sms"),
            child: "ExitNode",
          },
        ],
      }),
      [
        issue("definition.nodes.0.subscriptionGroupId", "no subscription group"),
        issue("definition.nodes.1.subscriptionGroupId", "is for Sms"),
      ],
    ],
    [
      "a split or wait segment that does not exist",
      () => ({
        ...base(),
        entryNode: { type: "EntryNode", segment: seg, child: "s" },
        nodes: [
          { id: "s", type: "SegmentSplitNode", segment: randomUUID(), trueChild: "w", falseChild: "ExitNode" },
          {
            id: "w",
            type: "WaitForNode",
            segmentChildren: [{ segmentId: randomUUID(), child: "ExitNode" }],
            timeoutSeconds: 60,
            timeoutChild: "ExitNode",
          },
        ],
      }),
      [issue("definition.nodes.0.segment", "no segment"), issue("definition.nodes.1.segmentChildren.0.segmentId", "no segment")],
    ],
    [
      "misspelt fields at any depth (unlike the draft, the definition keeps nothing it does not know)",
      () => ({
        entryNode: { type: "EntryNode", segment: seg, child: "w", delaySeconds: 5 },
        nodes: [
          {
            id: "w",
            type: "WaitForNode",
            segmentChildren: [{ segmentId: seg, child: "d", segmentID: seg }],
            timeoutSeconds: 60,
            timeoutChild: "ExitNode",
          },
          {
            id: "d",
            type: "DelayNode",
            variant: { type: "Second", seconds: 5, jitterSeconds: 1 },
            child: "ExitNode",
            position: { x: 1, y: 2 },
          },
        ],
        exitNode: { type: "ExitNode", label: "done" },
      }),
      [
        issue("definition.entryNode.delaySeconds", 'unknown field "delaySeconds"'),
        issue("definition.nodes.0.segmentChildren.0.segmentID", 'unknown field "segmentID"'),
        issue("definition.nodes.1.variant.jitterSeconds", 'unknown field "jitterSeconds"'),
        issue("definition.nodes.1.position", 'unknown field "position"'),
        issue("definition.exitNode.label", 'unknown field "label"'),
      ],
    ],
  ];

  for (const [what, make, expected] of cases) {
    it(`refuses ${what} with 400 naming the problem`, async () => {
      const res = await putJourney(t, body(await make()));
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("VALIDATION_FAILED");
      expect(res.body.error.issues).toEqual(expected);
    });
  }

  it("stores a valid definition as sent, the exit node filled in", async () => {
    const { exitNode: _exit, ...withoutExit } = base();
    const res = await putJourney(t, body(withoutExit));
    expect(res.status).toBe(200);
    expect(res.body.definition).toEqual({ ...base(), exitNode: { type: "ExitNode", id: "ExitNode" } });
  });
});
