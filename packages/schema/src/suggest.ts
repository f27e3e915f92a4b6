// "Did you mean": the known field closest to an unknown one (`within_seconds` → `withinSeconds`,
// `trait` → `traits`), for the server's and the CLI's messages about unknown fields.

interface ZodDef {
  type?: string;
  shape?: Record<string, unknown>;
  element?: unknown;
  options?: unknown[];
  innerType?: unknown;
  in?: unknown;
  out?: unknown;
  getter?: () => unknown;
  valueType?: unknown;
  left?: unknown;
  right?: unknown;
  items?: unknown[];
}

const defOf = (schema: unknown): ZodDef | undefined => (schema as { _zod?: { def?: ZodDef } } | null)?._zod?.def;

const keysCache = new WeakMap<object, Set<string>>();

/** Field names of every object inside a zod schema (through unions, arrays, wrappers and lazy schemas). */
export function schemaKeys(schema: unknown): Set<string> {
  if (!schema || typeof schema !== "object") return new Set();
  const cached = keysCache.get(schema);
  if (cached) return cached;
  const keys = new Set<string>();
  const seen = new Set<unknown>();
  const visit = (s: unknown) => {
    const def = defOf(s);
    if (!def || seen.has(s)) return;
    seen.add(s);
    const shape = def.type === "object" ? ((s as { shape?: Record<string, unknown> }).shape ?? def.shape) : undefined;
    if (shape) {
      for (const [key, value] of Object.entries(shape)) {
        keys.add(key);
        visit(value);
      }
    }
    for (const next of [def.element, def.innerType, def.in, def.out, def.valueType, def.left, def.right]) visit(next);
    for (const next of [...(def.options ?? []), ...(def.items ?? [])]) visit(next);
    if (def.type === "lazy" && typeof def.getter === "function") visit(def.getter());
  };
  visit(schema);
  keysCache.set(schema, keys);
  return keys;
}

const normalize = (key: string) => key.toLowerCase().replace(/[^a-z0-9]/g, "");

/** Edits from `a` to `b`: insertions, deletions, substitutions and swaps of two neighbours (`chlid` → `child` is one). */
function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The known key (or node id, or name) an unknown one most likely meant: same letters in another
 * case or separator, else at most two edits away (one for short words).
 */
export function closestKey(key: string, known: Iterable<string>): string | undefined {
  const wanted = normalize(key);
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of known) {
    if (candidate === key) continue;
    const d = distance(wanted, normalize(candidate));
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  const allowed = Math.min(2, Math.floor(wanted.length / 3));
  return best !== undefined && bestDistance <= allowed ? best : undefined;
}

/** ` (did you mean "withinSeconds"?)`, or nothing when no known key is close. */
export function didYouMean(key: string, known: Iterable<string>): string {
  const match = closestKey(key, known);
  return match === undefined ? "" : ` (did you mean ${JSON.stringify(match)}?)`;
}

/** The names among `known` closest to `name` (at most `most`, nearest first): for "no segment named …". */
export function closestNames(name: string, known: Iterable<string>, most = 3): string[] {
  const wanted = normalize(name);
  const allowed = Math.max(2, Math.floor(wanted.length / 3));
  return [...new Set(known)]
    .map((candidate) => ({ candidate, d: distance(wanted, normalize(candidate)) }))
    .filter(({ candidate, d }) => d <= allowed || normalize(candidate).includes(wanted) || wanted.includes(normalize(candidate)))
    .sort((a, b) => a.d - b.d || a.candidate.localeCompare(b.candidate))
    .slice(0, most)
    .map(({ candidate }) => candidate);
}

/** A validation issue as zod (or Fastify's zod provider) reports it. */
export interface RawIssue {
  path: readonly PropertyKey[];
  code?: string;
  message: string;
  /** The unknown keys of an `unrecognized_keys` issue. */
  keys?: readonly unknown[];
}

/** One issue a person reads: the path of the field to fix, and what is wrong with it. */
export interface ExplainedIssue {
  path: PropertyKey[];
  message: string;
}

const isMissing = (i: RawIssue) => i.code === "invalid_type" && /received undefined$/.test(i.message);
const keyOf = (path: readonly PropertyKey[]) => path.map(String).join("\u0000");

/**
 * One issue per mistake. An unknown key is reported at its own path, with the closest key the
 * object lacks (`chlid` for a missing `child`: one issue, "did you mean "child"?", not two), else
 * the closest key the schema knows; a missing required field says so once.
 */
export function explainIssues(issues: readonly RawIssue[], schema?: unknown): ExplainedIssue[] {
  const missing = new Map<string, Set<string>>();
  for (const i of issues) {
    if (!isMissing(i) || i.path.length === 0) continue;
    const parent = keyOf(i.path.slice(0, -1));
    missing.set(parent, (missing.get(parent) ?? new Set()).add(String(i.path[i.path.length - 1])));
  }
  // Each unknown key's closest missing key, found before anything is reported (the missing one may come first).
  const meant = new Map<string, string>();
  const taken = new Set<string>();
  for (const i of issues) {
    if (i.code !== "unrecognized_keys" || !Array.isArray(i.keys)) continue;
    const lacking = missing.get(keyOf(i.path)) ?? new Set<string>();
    for (const raw of i.keys) {
      const match = closestKey(String(raw), lacking);
      if (match === undefined) continue;
      meant.set(keyOf([...i.path, String(raw)]), match);
      taken.add(keyOf([...i.path, match]));
    }
  }
  const out: ExplainedIssue[] = [];
  for (const i of issues) {
    if (i.code === "unrecognized_keys" && Array.isArray(i.keys)) {
      for (const raw of i.keys) {
        const key = String(raw);
        const match = meant.get(keyOf([...i.path, key]));
        const hint =
          match !== undefined
            ? ` (did you mean ${JSON.stringify(match)}?)`
            : schema === undefined
              ? ""
              : didYouMean(key, schemaKeys(schema));
        out.push({ path: [...i.path, key], message: `unknown field ${JSON.stringify(key)}${hint}` });
      }
    } else if (!isMissing(i)) out.push({ path: [...i.path], message: i.message });
    else if (!taken.has(keyOf(i.path))) out.push({ path: [...i.path], message: "required, but missing" });
  }
  const seen = new Set<string>();
  return out.filter((i) => {
    const k = `${keyOf(i.path)}\u0001${i.message}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
