// Reads the files given to `apply -f`: JSON or YAML, one or more kind-tagged documents per file
// (a JSON array, or YAML documents separated by `---`), directories walked recursively; resolves
// references by name (references.ts) and points every problem at its line (locate.ts).
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { didYouMean, explainIssues } from "@tidings/schema";
import { isSeq, LineCounter, type Node, parseAllDocuments, parseDocument } from "yaml";
import { UsageError } from "../errors.js";
import { kindByName, type ResourceKind, type StoredResource } from "../resources.js";
import { type Locate, locator } from "./locate.js";
import { type ReferredKind, referredKinds, resolveReferences } from "./references.js";

export interface ResourceDocument {
  /** Where it came from: `dir/file.yaml`, or `dir/file.yaml#2` for the second document of a file. */
  source: string;
  kind: ResourceKind;
  /** The document without `kind`: what is sent. */
  body: Record<string, unknown>;
  /** `body` as the schema parsed it (trimmed name, defaults filled in): what is compared. */
  parsed: Record<string, unknown>;
  /** Where a field of the document is: `file:line:column`. */
  locate: Locate;
}

const EXTENSIONS = new Set([".json", ".yaml", ".yml"]);

/** Files under `paths`, directories expanded (sorted, recursive, hidden entries skipped). */
export function collectFiles(paths: readonly string[]): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (entry.name.startsWith(".") || entry.name === "node_modules") continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (EXTENSIONS.has(path.extname(entry.name).toLowerCase())) files.push(full);
    }
  };
  for (const p of paths) {
    let stat: ReturnType<typeof statSync>;
    try {
      stat = statSync(p);
    } catch {
      throw new UsageError(`-f ${p}: no such file or directory`);
    }
    if (stat.isDirectory()) walk(p);
    else files.push(p);
  }
  return files;
}

/** A document of a file, as plain data, with the positions of its fields. */
interface ParsedDocument {
  value: unknown;
  locate: Locate;
}

/** The documents of one file, or the reason the file cannot be read (with its line). */
function parseFile(file: string): ParsedDocument[] {
  const text = readFileSync(file, "utf8");
  const ext = path.extname(file).toLowerCase();
  const lines = new LineCounter();
  if (ext === ".json" || (ext !== ".yaml" && ext !== ".yml" && /^\s*[[{]/.test(text))) {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      throw new UsageError(`${file}: invalid JSON: ${(err as Error).message}`);
    }
    // Positions only: JSON is read by the YAML parser as well.
    const contents = parseDocument(text, { lineCounter: lines }).contents;
    if (!Array.isArray(value)) return [{ value, locate: locator(file, contents, lines) }];
    return value.map((v, i) => ({ value: v, locate: locator(file, isSeq(contents) ? (contents.items[i] as Node) : contents, lines) }));
  }
  const docs = parseAllDocuments(text, { lineCounter: lines });
  const parsed: ParsedDocument[] = [];
  for (const doc of Array.isArray(docs) ? docs : [docs]) {
    if (doc.errors.length) {
      const e = doc.errors[0]!;
      const at = e.linePos?.[0] ? `:${e.linePos[0].line}:${e.linePos[0].col}` : "";
      throw new UsageError(`${file}${at}: invalid YAML: ${e.message.split("\n")[0]}`);
    }
    const value = doc.toJS() as unknown;
    if (value === null || value === undefined) continue; // an empty document (e.g. a trailing `---`)
    if (Array.isArray(value) && isSeq(doc.contents)) {
      const items = doc.contents.items as Node[];
      parsed.push(...value.map((v, i) => ({ value: v, locate: locator(file, items[i], lines) })));
    } else parsed.push({ value, locate: locator(file, doc.contents, lines) });
  }
  return parsed;
}

/** A document with a known kind, before its references are resolved and it is validated. */
interface KindedDocument {
  source: string;
  kind: ResourceKind;
  body: Record<string, unknown>;
  locate: Locate;
}

/** Every document of every file, with its kind; problems for files and documents that are not resources. */
function readDocuments(files: readonly string[], problems: string[]): KindedDocument[] {
  const docs: KindedDocument[] = [];
  for (const file of files) {
    let values: ParsedDocument[];
    try {
      values = parseFile(file);
    } catch (err) {
      problems.push((err as Error).message);
      continue;
    }
    values.forEach(({ value, locate }, i) => {
      const source = values.length > 1 ? `${file}#${i + 1}` : file;
      if (!value || typeof value !== "object" || Array.isArray(value)) {
        problems.push(`${locate([])}: expected an object with a \`kind\``);
        return;
      }
      const { kind: kindName, ...body } = value as Record<string, unknown>;
      const kind = typeof kindName === "string" ? kindByName.get(kindName) : undefined;
      if (!kind) {
        const known = "Segment, Template, SubscriptionGroup, Journey, Policies";
        const what =
          kindName === undefined ? "missing" : `unknown kind ${JSON.stringify(kindName)}${didYouMean(String(kindName), kindByName.keys())}`;
        problems.push(`${locate(["kind"])}: kind: ${what} (expected one of ${known})`);
        return;
      }
      docs.push({ source, kind, body, locate });
    });
  }
  return docs;
}

const pathText = (p: readonly PropertyKey[]) => p.map(String).join(".") || "(document)";

/** The stored resources of the kinds the documents refer to by name (read only when some do). */
export type StoredOf = (kinds: ReadonlySet<ReferredKind>) => Promise<Map<ReferredKind, StoredResource[]>>;

/**
 * Loads every document, resolves its references by name (files first, then the workspace, read
 * through `storedOf`) and validates it. Throws one UsageError listing every problem in every
 * file, each at its `file:line:column`, so nothing is sent unless all of them are valid.
 */
export async function loadDocuments(paths: readonly string[], storedOf: StoredOf): Promise<ResourceDocument[]> {
  const files = collectFiles(paths);
  if (files.length === 0) throw new UsageError(`no .json, .yaml or .yml files in ${paths.join(", ")}`);
  const problems: string[] = [];
  const kinded = readDocuments(files, problems);
  const wanted = new Set(kinded.flatMap((d) => [...referredKinds(d.body)]));
  const resolver = {
    docs: kinded.map((d) => ({ kind: d.kind.kind, body: d.body })),
    stored: wanted.size ? await storedOf(wanted) : new Map(),
  };
  // Every reference first: resolving one may give the document it names its id.
  const referenceProblems = resolver.docs.map((d) => resolveReferences(d, resolver));
  const docs: ResourceDocument[] = [];
  for (const [i, doc] of kinded.entries()) {
    for (const p of referenceProblems[i]!) problems.push(`${doc.locate(p.path)}: ${pathText(p.path)}: ${p.message}`);
    const reported = new Set(referenceProblems[i]!.map((p) => pathText(p.path)));
    const parsed = doc.kind.body.safeParse(doc.body);
    if (!parsed.success) {
      for (const issue of explainIssues(parsed.error.issues, doc.kind.body)) {
        if (!reported.has(pathText(issue.path))) problems.push(`${doc.locate(issue.path)}: ${pathText(issue.path)}: ${issue.message}`);
      }
      continue;
    }
    if (referenceProblems[i]!.length === 0) docs.push({ ...doc, parsed: parsed.data as Record<string, unknown> });
  }
  const seen = new Map<string, ResourceDocument>();
  for (const doc of docs) {
    const key = doc.kind.singleton
      ? `${doc.kind.kind}:one per workspace`
      : `${doc.kind.kind}:${(doc.parsed.id as string | undefined) ?? `name=${doc.parsed.name as string}`}`;
    const other = seen.get(key);
    if (other) problems.push(`${doc.locate([])}: the same ${doc.kind.noun} as ${other.locate([])} (${key.split(":")[1]})`);
    else seen.set(key, doc);
  }
  if (problems.length) {
    throw new UsageError(`${problems.length} problem${problems.length === 1 ? "" : "s"} in the files; nothing was sent`, problems);
  }
  return docs;
}
