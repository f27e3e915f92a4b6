// Upserts loaded documents in dependency order and says, per resource, whether it was created,
// updated or left unchanged — or, with dryRun, what would happen, without writing.
import type { Api } from "../api.js";
import { listAll, resourceKinds, type StoredResource, upsertResource } from "../resources.js";
import type { ResourceDocument } from "./load.js";

export type ApplyResult = "created" | "updated" | "unchanged";

export interface ApplyOutcome {
  source: string;
  kind: string;
  name: string;
  /** Absent for a resource a dry run would create. */
  id?: string;
  result: ApplyResult;
  /** Top-level fields that differ from the stored resource (updates). */
  changes?: string[];
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

export async function applyDocuments(
  api: Api,
  docs: readonly ResourceDocument[],
  opts: { dryRun: boolean; onStart?: (doc: ResourceDocument) => void; onOutcome?: (o: ApplyOutcome) => void },
): Promise<ApplyOutcome[]> {
  const outcomes: ApplyOutcome[] = [];
  for (const kind of resourceKinds) {
    const ofKind = docs.filter((d) => d.kind === kind);
    if (ofKind.length === 0) continue;
    const stored = await listAll(api, kind);
    const byId = new Map(stored.map((r) => [r.id, r]));
    const byName = new Map(stored.map((r) => [r.name, r]));
    for (const doc of ofKind) {
      opts.onStart?.(doc);
      const id = doc.parsed.id as string | undefined;
      const name = doc.parsed.name as string;
      const existing = id ? byId.get(id) : byName.get(name);
      const changes = existing ? changedFields(doc, existing) : [];
      let outcome: ApplyOutcome;
      if (opts.dryRun) {
        outcome = existing
          ? {
              source: doc.source,
              kind: kind.kind,
              name,
              id: existing.id,
              result: changes.length ? "updated" : "unchanged",
              ...(changes.length ? { changes } : {}),
            }
          : { source: doc.source, kind: kind.kind, name, ...(id ? { id } : {}), result: "created" };
      } else {
        const saved = await upsertResource(api, kind, doc.body);
        // The server writes nothing for a PUT that changes nothing, so `updatedAt` tells.
        const result: ApplyResult = !existing ? "created" : saved.updatedAt !== existing.updatedAt ? "updated" : "unchanged";
        outcome = {
          source: doc.source,
          kind: kind.kind,
          name: saved.name,
          id: saved.id,
          result,
          ...(result === "updated" ? { changes } : {}),
        };
      }
      outcomes.push(outcome);
      opts.onOutcome?.(outcome);
    }
  }
  return outcomes;
}
