// Sends loaded documents to the server's apply (POST /api/admin/apply): written in one
// transaction, all or nothing — or, with dryRun, checked by the server exactly as a real apply
// would be and rolled back. Says per resource whether it was (would be) created, updated or left
// unchanged, and which fields an update changes.
import type { ApplyResponse } from "@tidings/schema";
import { isTidingsApiError, TidingsApiError } from "@tidings/sdk";
import type { Api } from "../api.js";
import { kindByName, listAll, resourceKinds, type StoredResource } from "../resources.js";
import type { ResourceDocument } from "./load.js";
import type { ReferredKind } from "./references.js";

export type ApplyResult = "created" | "updated" | "unchanged";

export interface ApplyOutcome {
  source: string;
  kind: string;
  name: string;
  /** Absent for a resource a dry run would create without an `id`. */
  id?: string;
  result: ApplyResult;
  /** Top-level fields that differ from the stored resource (updates). */
  changes?: string[];
  /** What the server warns about (a webhook URL its guard refuses). */
  warnings?: { path: string; message: string }[];
}

/** JSON with object keys sorted and undefined dropped, for comparing values by content. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

/**
 * Fields of the document whose value differs from the stored resource. A field the document
 * leaves out keeps its stored value on the server, so it is not a change; `null` removes one.
 */
export function changedFields(doc: ResourceDocument, stored: StoredResource): string[] {
  const ignored = new Set([...doc.kind.serverFields, "workspaceId"]);
  const changes: string[] = [];
  for (const [field, value] of Object.entries(doc.parsed)) {
    if (ignored.has(field) || value === undefined) continue;
    const current = stored[field];
    if (value === null ? current !== undefined && current !== null : canonical(value) !== canonical(current)) changes.push(field);
  }
  return changes;
}

/**
 * The server's error about one resource (`resources.2 (Segment "Pro users"): …`, issue paths
 * `resources.2.resource.definition…`), retold with the file it came from: issue paths within the
 * document, each at its `file:line:column`.
 */
function inFiles(err: unknown, docs: readonly ResourceDocument[]): unknown {
  if (!isTidingsApiError(err)) return err;
  const at = /^resources\.(\d+)\b/.exec(err.message);
  const doc = at ? docs[Number(at[1])] : undefined;
  if (!at || !doc) return err;
  // The SDK's message ends with the first issue in the server's terms; the issues follow, in the file's.
  const first = err.issues[0];
  const cut = first ? err.message.indexOf(`: ${first.path}: `) : -1;
  const message = `${doc.source}${err.message.slice(at[0].length, cut >= 0 ? cut : undefined)}`;
  const issues = err.issues.map((i) => {
    const path = i.path.replace(/^resources\.\d+\.resource\.?/, "");
    return { ...i, path, location: doc.locate(path ? path.split(".") : []) };
  });
  return new TidingsApiError(err.status, err.code, message, err.requestId, issues, { cause: err });
}

/** What the workspace stores of each kind (to resolve and to write back references by name). */
export async function storedOf(api: Api, kinds: ReadonlySet<ReferredKind>): Promise<Map<ReferredKind, StoredResource[]>> {
  const stored = new Map<ReferredKind, StoredResource[]>();
  for (const kind of kinds) stored.set(kind, await listAll(api, kindByName.get(kind)!));
  return stored;
}

export async function applyDocuments(
  api: Api,
  docs: readonly ResourceDocument[],
  opts: { dryRun: boolean; workspaceId?: string | undefined },
): Promise<ApplyOutcome[]> {
  // What is stored now, to name the fields an update changes (the server decides the result).
  const stored = new Map<string, StoredResource>();
  for (const kind of new Set(docs.map((d) => d.kind))) {
    for (const r of await listAll(api, kind)) {
      stored.set(`${kind.kind}:id:${r.id}`, r);
      stored.set(`${kind.kind}:name:${r.name}`, r);
    }
  }
  // Sent in the order the server writes them, so the report reads in that order too.
  docs = resourceKinds.flatMap((kind) => docs.filter((d) => d.kind === kind));
  const resources = docs.map((d) => ({
    kind: d.kind.kind,
    resource: opts.workspaceId && d.body.workspaceId === undefined ? { ...d.body, workspaceId: opts.workspaceId } : d.body,
  }));
  let response: ApplyResponse;
  try {
    response = await api.call("resources.apply", { body: { resources, dryRun: opts.dryRun } });
  } catch (err) {
    throw inFiles(err, docs);
  }
  return response.resources.map((r, i) => {
    const doc = docs[i]!;
    const id = doc.parsed.id as string | undefined;
    const name = doc.kind.singleton ? "policies" : (doc.parsed.name as string);
    const existing = stored.get(id ? `${doc.kind.kind}:id:${id}` : `${doc.kind.kind}:name:${name}`);
    const changes = r.result === "updated" && existing ? changedFields(doc, existing) : [];
    return {
      source: doc.source,
      kind: r.kind,
      name: r.name,
      ...(r.id ? { id: r.id } : {}),
      result: r.result,
      ...(changes.length ? { changes } : {}),
      ...(r.warnings?.length ? { warnings: r.warnings } : {}),
    };
  });
}
