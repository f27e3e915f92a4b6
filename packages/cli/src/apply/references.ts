// References by name in files: wherever a resource refers to a segment, template or subscription
// group by id, a file may write `{name: …}` instead (`templateId: {name: Welcome}`). `apply`
// resolves each against the files being applied, then the workspace; `get` writes them back.
import { closestNames } from "@tidings/schema";
import { randomUUID } from "node:crypto";
import type { StoredResource } from "../resources.js";

export type ReferredKind = "Segment" | "Template" | "SubscriptionGroup";

/** The fields that hold a reference, wherever they are in a document, and what they refer to. */
export const REFERENCE_FIELDS: Readonly<Record<string, ReferredKind>> = {
  segment: "Segment",
  segmentId: "Segment",
  exitSegmentId: "Segment",
  templateId: "Template",
  subscriptionGroupId: "SubscriptionGroup",
};

const NOUNS: Record<ReferredKind, string> = { Segment: "segment", Template: "template", SubscriptionGroup: "subscription group" };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A reference field found in a document: where, to what kind, and what it holds. */
export interface Reference {
  path: (string | number)[];
  kind: ReferredKind;
  /** `{name}` given: the name; else the value as written. */
  name?: string;
  value: unknown;
}

/** A `{name: "…"}` object (nothing else in it). */
const nameOf = (value: unknown): string | undefined => {
  if (!value || typeof value !== "object" || Array.isArray(value)) return undefined;
  const entries = Object.entries(value);
  return entries.length === 1 && entries[0]![0] === "name" && typeof entries[0]![1] === "string" ? entries[0]![1].trim() : undefined;
};

/** Every reference field of `value`, depth first. */
export function findReferences(value: unknown, path: (string | number)[] = []): Reference[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => findReferences(v, [...path, i]));
  if (!value || typeof value !== "object") return [];
  const found: Reference[] = [];
  for (const [key, v] of Object.entries(value)) {
    const kind = REFERENCE_FIELDS[key];
    const name = kind ? nameOf(v) : undefined;
    if (kind && (name !== undefined || typeof v === "string"))
      found.push({ path: [...path, key], kind, value: v, ...(name !== undefined ? { name } : {}) });
    else found.push(...findReferences(v, [...path, key]));
  }
  return found;
}

/** Sets the field at `path` of `value` (which has it). */
function setAt(value: unknown, path: readonly (string | number)[], to: unknown): void {
  let node = value as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  node[path[path.length - 1]!] = to;
}

/** A document being applied, as far as references go: its kind, its body (edited in place), its name. */
export interface Referable {
  kind: string;
  body: Record<string, unknown>;
}

/** What names resolve against: the documents being applied, and what each kind stores now. */
export interface Resolver {
  docs: readonly Referable[];
  stored: ReadonlyMap<ReferredKind, readonly StoredResource[]>;
}

/**
 * Replaces the `{name}` references of `doc` with ids: a document of the files with that kind and
 * name (its id; one created by this apply gets its id now, so that both carry it), else the
 * stored resource of that name. Returns a problem per reference that resolves to nothing, and per
 * id field holding neither an id nor `{name}` (with the form to write), each with its path.
 */
export function resolveReferences(doc: Referable, resolver: Resolver): { path: (string | number)[]; message: string }[] {
  const problems: { path: (string | number)[]; message: string }[] = [];
  const inDraft = (ref: Reference) => ref.path[0] === "draft";
  for (const ref of findReferences(doc.body)) {
    const stored = resolver.stored.get(ref.kind) ?? [];
    if (ref.name === undefined) {
      const text = ref.value as string;
      if (UUID.test(text) || inDraft(ref)) continue;
      const exists = stored.some((r) => r.name === text.trim()) || fileDoc(resolver, ref.kind, text.trim());
      const form = `${String(ref.path[ref.path.length - 1])}: {name: ${JSON.stringify(text.trim())}}`;
      problems.push({
        path: ref.path,
        message: exists
          ? `expected a ${NOUNS[ref.kind]} id; to refer to the ${NOUNS[ref.kind]} named ${JSON.stringify(text.trim())}, write \`${form}\``
          : `expected a ${NOUNS[ref.kind]} id (a UUID) or \`{name: …}\`${suggestion(ref.kind, text.trim(), resolver)}`,
      });
      continue;
    }
    const id = idInFiles(resolver, ref.kind, ref.name) ?? stored.find((r) => r.name === ref.name)?.id;
    if (id === undefined) {
      problems.push({
        path: ref.path,
        message: `no ${NOUNS[ref.kind]} named ${JSON.stringify(ref.name)} in the files or the workspace${suggestion(ref.kind, ref.name, resolver)}`,
      });
      continue;
    }
    setAt(doc.body, ref.path, id);
  }
  return problems;
}

const nameOfDoc = (d: Referable) => (typeof d.body.name === "string" ? d.body.name.trim() : undefined);
const fileDoc = (resolver: Resolver, kind: ReferredKind, name: string) =>
  resolver.docs.find((d) => d.kind === kind && nameOfDoc(d) === name);

/** The id of the document of the files with this kind and name: its own, the stored one's of that name, or a new one it is created with. */
function idInFiles(resolver: Resolver, kind: ReferredKind, name: string): string | undefined {
  const doc = fileDoc(resolver, kind, name);
  if (!doc) return undefined;
  if (typeof doc.body.id === "string") return doc.body.id;
  const stored = resolver.stored.get(kind)?.find((r) => r.name === name);
  if (stored) return stored.id;
  doc.body.id = randomUUID();
  return doc.body.id as string;
}

/** ` (closest: "Welcome hook", "Welcome")`, ` (there is no segment yet)`, or nothing. */
function suggestion(kind: ReferredKind, name: string, resolver: Resolver): string {
  const names = [
    ...(resolver.stored.get(kind) ?? []).map((r) => r.name),
    ...resolver.docs.filter((d) => d.kind === kind).flatMap((d) => nameOfDoc(d) ?? []),
  ];
  if (names.length === 0) return ` (there is no ${NOUNS[kind]} yet)`;
  const close = closestNames(name, names);
  return close.length ? ` (closest: ${close.map((n) => JSON.stringify(n)).join(", ")})` : "";
}

/**
 * `resource` with each reference to a stored resource written as `{name}` (for `get`: what
 * `apply` takes back); ids of nothing stored stay as they are.
 */
export function withNames<T>(resource: T, stored: ReadonlyMap<ReferredKind, readonly StoredResource[]>): T {
  const copy = structuredClone(resource);
  for (const ref of findReferences(copy)) {
    if (typeof ref.value !== "string") continue;
    const found = stored.get(ref.kind)?.find((r) => r.id === ref.value);
    if (found) setAt(copy, ref.path, { name: found.name });
  }
  return copy;
}

/** The kinds `value` refers to (to list only what resolving needs). */
export const referredKinds = (value: unknown): Set<ReferredKind> => new Set(findReferences(value).map((r) => r.kind));
