// The four kinds of stored definitions the CLI manages alike — segments, templates, subscription
// groups, journeys: their operations, the schema a file is validated with, and their table.
import {
  type DefinitionFailure,
  type JourneyResource,
  type MessageTemplateResource,
  type OperationId,
  PoliciesBody,
  type SegmentResource,
  type SubscriptionGroupResource,
  UpsertJourneyRequestBody,
  UpsertMessageTemplateRequestBody,
  UpsertSegmentRequestBody,
  UpsertSubscriptionGroupRequestBody,
} from "@tidings/schema";
import type { Api } from "./api.js";
import { isUuid } from "./context.js";
import { notFoundByName } from "./errors.js";
import { type Column, formatTime } from "./output.js";

/** The part of a zod schema the CLI uses (the CLI does not depend on zod itself). */
export interface BodySchema {
  safeParse(
    value: unknown,
  ): { success: true; data: unknown } | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } };
}

/** A stored resource, as every kind has at least these fields. */
export interface StoredResource {
  id: string;
  name: string;
  updatedAt: number;
  [field: string]: unknown;
}

export interface ResourceKind {
  /** The `kind:` of an apply file. */
  kind: "SubscriptionGroup" | "Segment" | "Template" | "Journey" | "Policies";
  /** The command group, e.g. `subscription-groups`. */
  command: string;
  /** For messages: "subscription group". */
  noun: string;
  /** The contracts' prefix: `<contracts>.upsert`, `.list`, `.get` and `.delete` are its operations. */
  contracts: "subscriptionGroups" | "segments" | "templates" | "journeys" | "policies";
  /** One per workspace, without id or name (the delivery policies): read with `<contracts>.get`, no list. */
  singleton?: true;
  /** The PUT body schema files are validated with. */
  body: BodySchema;
  /** Response fields the server manages: never compared with a file. */
  serverFields: readonly string[];
  columns: readonly Column<StoredResource>[];
}

const named: Column<StoredResource>[] = [
  { header: "NAME", value: (r) => r.name },
  { header: "ID", value: (r) => r.id },
];
const updated: Column<StoredResource> = { header: "UPDATED", value: (r) => formatTime(r.updatedAt) };
/** A segment's or journey's evaluation failure (it is set aside and retried), or nothing. */
const failing: Column<StoredResource> = {
  header: "FAILING",
  optional: true,
  value: (r) => {
    const f = (r as { failing?: DefinitionFailure }).failing;
    if (!f) return "";
    const reason = f.reason.length > 60 ? `${f.reason.slice(0, 59)}…` : f.reason;
    return `${reason} (retry ${formatTime(f.retryAt)})`;
  },
};
type Verb = "upsert" | "list" | "get" | "delete";
/** A kind's operation (it compiles only if every prefix and verb name a contract). */
const op = (kind: ResourceKind, verb: Verb): OperationId => {
  if (kind.contracts === "policies") throw new Error(`the delivery policies have no ${verb} by id`);
  return `${kind.contracts}.${verb}`;
};
const common = ["id", "workspaceId", "createdAt", "updatedAt"];

const subscriptionGroups: ResourceKind = {
  kind: "SubscriptionGroup",
  command: "subscription-groups",
  noun: "subscription group",
  contracts: "subscriptionGroups",
  body: UpsertSubscriptionGroupRequestBody,
  serverFields: common,
  columns: [
    ...named,
    { header: "CHANNEL", value: (r) => (r as unknown as SubscriptionGroupResource).channel },
    { header: "TYPE", value: (r) => (r as unknown as SubscriptionGroupResource).type },
    updated,
  ],
};

const segments: ResourceKind = {
  kind: "Segment",
  command: "segments",
  noun: "segment",
  contracts: "segments",
  body: UpsertSegmentRequestBody,
  serverFields: [...common, "definitionUpdatedAt", "lastRecomputed", "memberCount", "failing"],
  columns: [
    ...named,
    { header: "ENTRY", value: (r) => (r as unknown as SegmentResource).definition?.entryNode.type },
    { header: "MEMBERS", value: (r) => (r as unknown as SegmentResource).memberCount, right: true },
    updated,
    failing,
  ],
};

const templates: ResourceKind = {
  kind: "Template",
  command: "templates",
  noun: "template",
  contracts: "templates",
  body: UpsertMessageTemplateRequestBody,
  serverFields: [...common, "type"],
  columns: [
    ...named,
    { header: "TYPE", value: (r) => (r as unknown as MessageTemplateResource).type },
    { header: "DEFINITION", value: (r) => ((r as unknown as MessageTemplateResource).definition ? "yes" : "no (draft only)") },
    updated,
  ],
};

const journeys: ResourceKind = {
  kind: "Journey",
  command: "journeys",
  noun: "journey",
  contracts: "journeys",
  body: UpsertJourneyRequestBody,
  serverFields: [...common, "version", "failing"],
  columns: [
    ...named,
    { header: "STATUS", value: (r) => (r as unknown as JourneyResource).status },
    { header: "ENTRY", value: (r) => (r as unknown as JourneyResource).definition?.entryNode.type },
    updated,
    failing,
  ],
};

/** The workspace's delivery policies: one document, applied whole. */
export const policies: ResourceKind = {
  kind: "Policies",
  command: "policies",
  noun: "delivery policies",
  contracts: "policies",
  singleton: true,
  body: PoliciesBody,
  serverFields: [...common, "name"],
  columns: [],
};

/** In the order `apply` writes them: what a later kind may reference comes first. */
export const resourceKinds: readonly ResourceKind[] = [subscriptionGroups, segments, templates, journeys, policies];

/** `kind:` values accepted in files, with a few spellings people use. */
export const kindByName = new Map<string, ResourceKind>([
  ...resourceKinds.map((k) => [k.kind, k] as const),
  ["MessageTemplate", templates],
]);

type Untyped = (id: OperationId, input: Record<string, unknown>) => Promise<unknown>;
const untyped = (api: Api): Untyped => api.call.bind(api) as unknown as Untyped;

/** Every stored resource of a kind (all pages); the delivery policies as one, named `policies`. */
export async function listAll(api: Api, kind: ResourceKind): Promise<StoredResource[]> {
  if (kind.singleton) {
    const stored = await api.call("policies.get", {});
    return [{ ...stored, id: stored.workspaceId, name: "policies", updatedAt: stored.updatedAt ?? 0 }];
  }
  const items: StoredResource[] = [];
  let cursor: string | undefined;
  do {
    const page = (await untyped(api)(op(kind, "list"), { query: { limit: 500, cursor } })) as {
      items: StoredResource[];
      nextCursor: string | null;
    };
    items.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return items;
}

/** One page of a kind, for `list`. */
export async function listPage(api: Api, kind: ResourceKind, limit: number, cursor?: string) {
  return (await untyped(api)(op(kind, "list"), { query: { limit, cursor } })) as { items: StoredResource[]; nextCursor: string | null };
}

export async function getResource(api: Api, kind: ResourceKind, id: string): Promise<StoredResource> {
  return (await untyped(api)(op(kind, "get"), { params: { id } })) as StoredResource;
}

export async function deleteResource(api: Api, kind: ResourceKind, id: string): Promise<void> {
  await untyped(api)(op(kind, "delete"), { params: { id } });
}

export async function upsertResource(api: Api, kind: ResourceKind, body: Record<string, unknown>): Promise<StoredResource> {
  return (await untyped(api)(op(kind, "upsert"), { body })) as StoredResource;
}

/** Finds a resource by id or by exact name (names are unique per kind and workspace). */
export async function resolveResource(api: Api, kind: ResourceKind, ref: string): Promise<StoredResource> {
  if (isUuid(ref)) return getResource(api, kind, ref);
  const name = ref.trim();
  const found = (await listAll(api, kind)).find((r) => r.name === name);
  if (!found) throw notFoundByName(kind.noun, name);
  return found;
}
