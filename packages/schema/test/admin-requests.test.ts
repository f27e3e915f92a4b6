// Admin request bodies refuse what they do not know, at any depth; a journey's `draft` (editor
// state) and a render request's inline `user` (traits) are the only places that keep it.
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import * as events from "../src/events.js";
import * as schema from "../src/index.js";

/** Every admin request body: the `…RequestBody` exports that are not ingestion events. */
const isZod = (value: unknown): value is z.ZodType => typeof value === "object" && value !== null && "_zod" in value;
const zodExports = (suffix: string) =>
  Object.entries(schema as Record<string, unknown>).filter(
    (entry): entry is [string, z.ZodType] => entry[0].endsWith(suffix) && isZod(entry[1]),
  );
const adminBodies = zodExports("RequestBody").filter(([name]) => !(name in events));

/** Where a body may keep unknown fields (and must, at every level below). */
const keepsUnknown: Record<string, string[]> = {
  UpsertJourneyRequestBody: ["draft"],
  RenderTemplateRequestBody: ["user"],
  // A journey applied in a batch carries its editor draft like a journey PUT.
  ApplyRequestBody: ["resources[].resource.draft"],
};

type Def = { type: string; [k: string]: any };
const defOf = (s: z.ZodType) => (s as unknown as { _zod: { def: Def } })._zod.def;

/** Every object schema reachable from `root`, with its path (`[]` for array items). */
function objects(root: z.ZodType): { path: string; mode: "strict" | "loose" | "strip" }[] {
  const found: { path: string; mode: "strict" | "loose" | "strip" }[] = [];
  const seen = new Set<unknown>();
  const walk = (s: z.ZodType, path: string) => {
    if (seen.has(s)) return;
    seen.add(s);
    const def = defOf(s);
    switch (def.type) {
      case "object": {
        const catchall = def.catchall ? defOf(def.catchall).type : undefined;
        found.push({ path, mode: catchall === "never" ? "strict" : catchall === undefined ? "strip" : "loose" });
        for (const [key, child] of Object.entries(def.shape as Record<string, z.ZodType>)) walk(child, path ? `${path}.${key}` : key);
        return;
      }
      case "optional":
      case "nullable":
      case "default":
      case "prefault":
      case "nonoptional":
      case "readonly":
      case "catch":
        return walk(def.innerType, path);
      case "pipe":
        walk(def.in, path);
        return walk(def.out, path);
      case "array":
        return walk(def.element, `${path}[]`);
      case "union":
        for (const option of def.options) walk(option, path);
        return;
      case "record":
        return walk(def.valueType, `${path}{}`);
      case "intersection":
        walk(def.left, path);
        return walk(def.right, path);
      case "lazy":
        return walk(def.getter(), path);
    }
  };
  walk(root, "");
  return found;
}

describe("admin request bodies", () => {
  it("are found (the structural checks below have something to check)", () => {
    expect(adminBodies.map(([name]) => name)).toEqual(
      expect.arrayContaining([
        "UpsertSegmentRequestBody",
        "SegmentMembersRequestBody",
        "UpsertMessageTemplateRequestBody",
        "RenderTemplateRequestBody",
        "UpsertSubscriptionGroupRequestBody",
        "SubscriptionAssignmentsRequestBody",
        "UpsertChannelProviderRequestBody",
        "UpsertJourneyRequestBody",
        "CreateWorkspaceRequestBody",
        "CreateApiKeyRequestBody",
        "CreateWorkspaceApiKeyRequestBody",
      ]),
    );
  });

  it.each(adminBodies)("%s is strict at every depth, except where editor state or traits live", (name, body) => {
    const allowed = keepsUnknown[name] ?? [];
    const inAllowed = (path: string) => allowed.some((p) => path === p || path.startsWith(`${p}.`) || path.startsWith(`${p}[]`));
    const found = objects(body);
    expect(found.length).toBeGreaterThan(0);
    const wrong = found.filter(({ path, mode }) => (inAllowed(path) ? mode !== "loose" : mode !== "strict"));
    expect(wrong).toEqual([]);
  });

  it("and the query strings take workspaceId as optional everywhere", () => {
    const queries = zodExports("Query");
    let checked = 0;
    for (const [name, s] of [...adminBodies, ...queries]) {
      for (const shape of objectShapes(s)) {
        if (!("workspaceId" in shape)) continue;
        checked++;
        expect(shape.workspaceId!.safeParse(undefined).success, name).toBe(true);
      }
    }
    expect(checked).toBeGreaterThan(15);
  });
});

/** The top-level object shapes of a body (one per union option). */
function objectShapes(s: z.ZodType): Record<string, z.ZodType>[] {
  const def = defOf(s);
  if (def.type === "object") return [def.shape];
  if (def.type === "union") return def.options.flatMap(objectShapes);
  if ("innerType" in def) return objectShapes(def.innerType);
  if (def.type === "pipe") return objectShapes(def.in);
  return [];
}

describe("segment definitions", () => {
  it("refuse a Performed node's misspelt `within_seconds` instead of dropping it", () => {
    const r = schema.SegmentDefinition.safeParse({
      entryNode: { type: "And", id: "root", children: ["p"] },
      nodes: [
        { type: "Everyone", id: "e" },
        { type: "Performed", id: "p", event: "Order Completed", within_seconds: 3600 },
      ],
    });
    expect(r.success).toBe(false);
    expect(r.error!.issues).toEqual([expect.objectContaining({ code: "unrecognized_keys", keys: ["within_seconds"], path: ["nodes", 1] })]);
    const spelt = schema.SegmentDefinition.parse({
      entryNode: { type: "Performed", id: "p", event: "Order Completed", withinSeconds: 3600 },
    });
    expect(spelt.entryNode).toMatchObject({ withinSeconds: 3600 });
  });
});

describe("upsert bodies", () => {
  it("accept the server-managed fields and leave workspaceId out", () => {
    const managed = { createdAt: 1, updatedAt: 2, definitionUpdatedAt: 3, lastRecomputed: 4 };
    expect(schema.UpsertSegmentRequestBody.safeParse({ name: "s", ...managed }).success).toBe(true);
    expect(schema.UpsertMessageTemplateRequestBody.safeParse({ name: "t", type: "Sms", ...managed }).success).toBe(true);
    expect(schema.UpsertSubscriptionGroupRequestBody.safeParse({ name: "g", channel: "Sms", type: "OptIn", ...managed }).success).toBe(
      true,
    );
    expect(schema.UpsertJourneyRequestBody.safeParse({ name: "j", ...managed }).success).toBe(true);
    expect(schema.UpsertChannelProviderRequestBody.safeParse({ channel: "Sms", type: "Log", ...managed }).success).toBe(true);
  });

  it("trim names and refuse blank ones", () => {
    expect(schema.UpsertSegmentRequestBody.parse({ name: "  VIPs \n" }).name).toBe("VIPs");
    for (const name of ["", " ", "\t\n "]) {
      const r = schema.UpsertJourneyRequestBody.safeParse({ name });
      expect(r.error?.issues).toEqual([expect.objectContaining({ path: ["name"], message: "must not be empty or only whitespace" })]);
    }
    expect(schema.CreateApiKeyRequestBody.safeParse({ name: "  " }).success).toBe(false);
    expect(schema.CreateApiKeyRequestBody.safeParse(null).success).toBe(true);
  });
});

describe("journey drafts", () => {
  it("keep editor state at every level, as sent, and fill in no defaults", () => {
    const draft = {
      viewport: { x: 0, y: 0, zoom: 1.5 },
      nodes: [
        {
          id: "d",
          position: { x: 10, y: 20 },
          measured: { width: 200, height: 80 },
          selected: true,
          data: {
            type: "JourneyUiNodeDefinitionProps",
            collapsed: false,
            nodeTypeProps: { type: "DelayNode", color: "#fc0", variant: { type: "LocalTime", hour: 9, pickerOpen: true } },
          },
        },
        {
          id: "w",
          data: {
            type: "JourneyUiNodeDefinitionProps",
            nodeTypeProps: {
              type: "WaitForNode",
              timeoutLabelNodeId: "t",
              segmentChildren: [{ labelNodeId: "l", colour: "red" }],
            },
          },
        },
        { id: "l", data: { type: "JourneyUiNodeLabelProps", title: "in", editing: true } },
      ],
      edges: [{ source: "d", target: "w", animated: true, data: { type: "JourneyUiPlaceholderEdgeProps", hovered: 1 } }],
    };
    expect(schema.JourneyDraft.parse(structuredClone(draft))).toEqual(draft);
  });
});
