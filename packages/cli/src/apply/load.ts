// Reads the files given to `apply -f`: JSON or YAML, one or more kind-tagged documents per file
// (a JSON array, or YAML documents separated by `---`), directories walked recursively.
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { parseAllDocuments } from "yaml";
import { UsageError, zodIssues } from "../errors.js";
import { kindByName, type ResourceKind } from "../resources.js";

export interface ResourceDocument {
  /** Where it came from: `dir/file.yaml`, or `dir/file.yaml#2` for the second document of a file. */
  source: string;
  kind: ResourceKind;
  /** The document without `kind`: what is sent. */
  body: Record<string, unknown>;
  /** `body` as the schema parsed it (trimmed name, defaults filled in): what is compared. */
  parsed: Record<string, unknown>;
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

/** The documents of one file, each as plain data, or the reason the file cannot be read. */
function parseFile(file: string): unknown[] {
  const text = readFileSync(file, "utf8");
  const ext = path.extname(file).toLowerCase();
  if (ext === ".json" || (ext !== ".yaml" && ext !== ".yml" && /^\s*[[{]/.test(text))) {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      throw new UsageError(`${file}: invalid JSON: ${(err as Error).message}`);
    }
    return Array.isArray(value) ? value : [value];
  }
  const docs = parseAllDocuments(text);
  const values: unknown[] = [];
  for (const doc of Array.isArray(docs) ? docs : [docs]) {
    if (doc.errors.length) {
      const e = doc.errors[0]!;
      const at = e.linePos?.[0] ? ` (line ${e.linePos[0].line})` : "";
      throw new UsageError(`${file}: invalid YAML${at}: ${e.message.split("\n")[0]}`);
    }
    const value = doc.toJS() as unknown;
    if (value === null || value === undefined) continue; // an empty document (e.g. a trailing `---`)
    if (Array.isArray(value)) values.push(...value);
    else values.push(value);
  }
  return values;
}

/**
 * Loads and validates every document. Throws one UsageError listing every problem in every
 * file, so nothing is sent unless all of them are valid.
 */
export function loadDocuments(paths: readonly string[]): ResourceDocument[] {
  const files = collectFiles(paths);
  if (files.length === 0) throw new UsageError(`no .json, .yaml or .yml files in ${paths.join(", ")}`);
  const docs: ResourceDocument[] = [];
  const problems: string[] = [];
  for (const file of files) {
    let values: unknown[];
    try {
      values = parseFile(file);
    } catch (err) {
      problems.push((err as Error).message);
      continue;
    }
    values.forEach((value, i) => {
      const source = values.length > 1 ? `${file}#${i + 1}` : file;
      if (!value || typeof value !== "object" || Array.isArray(value)) {
        problems.push(`${source}: expected an object with a \`kind\``);
        return;
      }
      const { kind: kindName, ...body } = value as Record<string, unknown>;
      const kind = typeof kindName === "string" ? kindByName.get(kindName) : undefined;
      if (!kind) {
        const known = "Segment, Template, SubscriptionGroup, Journey";
        problems.push(
          `${source}: kind: ${kindName === undefined ? "missing" : `unknown kind ${JSON.stringify(kindName)}`} (expected one of ${known})`,
        );
        return;
      }
      const parsed = kind.body.safeParse(body);
      if (!parsed.success) {
        for (const issue of zodIssues(parsed.error, "", kind.body)) problems.push(`${source}: ${issue}`);
        return;
      }
      docs.push({ source, kind, body, parsed: parsed.data as Record<string, unknown> });
    });
  }
  const seen = new Map<string, string>();
  for (const doc of docs) {
    const key = `${doc.kind.kind}:${(doc.parsed.id as string | undefined) ?? `name=${doc.parsed.name as string}`}`;
    const other = seen.get(key);
    if (other) problems.push(`${doc.source}: the same ${doc.kind.noun} as ${other} (${key.split(":")[1]})`);
    else seen.set(key, doc.source);
  }
  if (problems.length) {
    throw new UsageError(`${problems.length} problem${problems.length === 1 ? "" : "s"} in the files; nothing was sent`, problems);
  }
  return docs;
}
