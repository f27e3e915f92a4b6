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

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!;
      row[j] = Math.min(above + 1, row[j - 1]! + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length]!;
}

/** The known key an unknown one most likely meant: same letters in another case or separator, else at most two edits away. */
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
