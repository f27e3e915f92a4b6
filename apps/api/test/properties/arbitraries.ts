// Generators of hostile JSON for the property tests: arbitrary values, and mutations of a valid
// body (a field replaced by a value of the wrong type, a huge or strange string, deep nesting,
// null, a field removed, an unknown field added). Every value survives JSON.stringify, so what is
// generated is what the server receives.
import fc from "fast-check";

/** Characters that break naive code: NUL, lone surrogates, BOM, bidi override, combining marks, astral. */
const oddChar = fc.constantFrom("\u0000", "\ud800", "\udfff", "\ufeff", "\u202e", "\u0301", "😀", "\n", '"', "\\", ".", "$", "%", "'");
/** Mostly what PostgreSQL cannot store (NUL, unpaired surrogates), else another odd character. */
const unstorableOrOdd = fc.oneof({ weight: 2, arbitrary: fc.constantFrom("\u0000", "\ud800", "\udfff") }, oddChar);
const char = fc.oneof(fc.string({ unit: "binary", minLength: 1, maxLength: 1 }), oddChar);

/** Short strings of any code point, lone surrogates and NUL included. */
export const strangeString = fc.string({ unit: char, maxLength: 12 });

/** Short strings every field of the kind accepts: any code point but NUL, surrogates paired. */
export const plainString = fc.string({ unit: "binary", minLength: 1, maxLength: 12 }).filter((v) => !v.includes("\u0000"));

/** Strings over the length limits of every field (ids 255, names 200, templates 10 000 …). */
export const hugeString = fc
  .tuple(fc.constantFrom(201, 256, 2_001, 10_001, 70_000, 600_000), fc.constantFrom("a", "é", "😀", "{{x}}"))
  .map(([n, c]) => c.repeat(Math.ceil(n / c.length)));

/** A value wrapped in arrays or objects deeper than any limit (the ingestion limit is 64). */
export const deepValue = fc
  // Not thousands: fast-check prints a counterexample recursively, and would overflow the stack.
  .tuple(fc.constantFrom(65, 100, 300), fc.boolean(), fc.jsonValue({ maxDepth: 1 }))
  .map(([depth, arrays, leaf]) => {
    let v: unknown = leaf;
    for (let i = 0; i < depth; i++) v = arrays ? [v] : { a: v };
    return v;
  });

/** Numbers JSON can carry that code may not expect. */
export const edgeNumber = fc.constantFrom(
  0,
  -1,
  1.5,
  1e21,
  -1e21,
  1e308,
  -1e308,
  5e-324,
  2 ** 53 + 2,
  -(2 ** 31),
  2 ** 31,
  253402300800000,
);

/** Strings that look like what a field wants, nearly. */
export const nearlyValid = fc.constantFrom(
  "",
  " ",
  "2024-02-30T00:00:00Z",
  "0000-01-01T00:00:00Z",
  "9999-12-31T23:59:59.999Z",
  "275760-09-13T00:00:00Z",
  "2024-01-01T00:00:00+99:00",
  "00000000-0000-0000-0000-000000000000",
  "ffffffff-ffff-ffff-ffff-ffffffffffff",
  "ExitNode",
  "__proto__",
  "constructor",
  "toString",
  "{{ user.id }}",
  "{% raw %}",
  "{{",
  "{% for x in (1..100000000) %}{% endfor %}",
  "NaN",
  "Infinity",
);

/** Any hostile value. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 3, arbitrary: strangeString },
  { weight: 1, arbitrary: hugeString },
  { weight: 1, arbitrary: deepValue },
  { weight: 1, arbitrary: edgeNumber },
  { weight: 2, arbitrary: nearlyValid },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.dictionary(strangeString, fc.jsonValue({ maxDepth: 1 }), { maxKeys: 4 }) },
);

type Step =
  | { op: "set"; at: number; value: unknown }
  | { op: "delete"; at: number }
  | { op: "extra"; at: number; key: string; value: unknown }
  | { op: "duplicate"; at: number }
  | { op: "poison"; at: number; char: string; position: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant("set" as const), at: fc.nat(), value: hostileValue }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("delete" as const), at: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant("extra" as const),
      at: fc.nat(),
      key: fc.oneof(strangeString, fc.constantFrom("__proto__", "constructor", "type", "id", "writeKey")),
      value: hostileValue,
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("duplicate" as const), at: fc.nat() }) },
  {
    weight: 3,
    arbitrary: fc.record({ op: fc.constant("poison" as const), at: fc.nat(), char: unstorableOrOdd, position: fc.nat() }),
  },
);

type Container = Record<string, unknown> | unknown[];
type Slot = { parent: Container; key: string | number };

/** Mutations reach this deep; below it is a deep value generated on purpose. */
const REACH = 8;

/** Every (container, key) slot of a JSON value, depth first. */
function slots(value: unknown, out: Slot[] = [], depth = 0): Slot[] {
  if (depth > REACH) return out;
  if (Array.isArray(value)) {
    value.forEach((v, i) => {
      out.push({ parent: value, key: i });
      slots(v, out, depth + 1);
    });
  } else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      out.push({ parent: value as Record<string, unknown>, key: k });
      slots(v, out, depth + 1);
    }
  }
  return out;
}

function containers(value: unknown, out: Container[] = [], depth = 0): Container[] {
  if (depth <= REACH && value !== null && typeof value === "object") {
    out.push(value as Container);
    for (const v of Object.values(value)) containers(v, out, depth + 1);
  }
  return out;
}

function apply(body: unknown, s: Step): unknown {
  if (s.op === "poison") {
    // An odd character into one string value: names, ids, template text, paths.
    const strings = slots(body).filter(({ parent, key }) => typeof (parent as Record<string | number, unknown>)[key] === "string");
    const slot = strings[s.at % Math.max(strings.length, 1)];
    if (!slot) return body;
    const target = slot.parent as Record<string | number, string>;
    const v = target[slot.key]!;
    const at = s.position % (v.length + 1);
    target[slot.key] = v.slice(0, at) + s.char + v.slice(at);
    return body;
  }
  if (s.op === "extra") {
    const all = containers(body).filter((c) => !Array.isArray(c)) as Record<string, unknown>[];
    const target = all[s.at % Math.max(all.length, 1)];
    // Defined as an own property so a "__proto__" key is sent as data, not as a prototype.
    if (target) Object.defineProperty(target, s.key, { value: s.value, enumerable: true, writable: true, configurable: true });
    return body;
  }
  const all = slots(body);
  const slot = all[s.at % Math.max(all.length, 1)];
  if (!slot) return s.op === "set" ? s.value : body;
  const { parent, key } = slot;
  if (s.op === "set") (parent as Record<string | number, unknown>)[key] = s.value;
  else if (s.op === "delete") {
    if (Array.isArray(parent)) parent.splice(key as number, 1);
    else delete parent[key as string];
  } else if (Array.isArray(parent)) parent.push(structuredClone(parent[key as number]));
  return body;
}

/** A valid body, changed by one to three hostile steps. */
export function mutated<T>(valid: fc.Arbitrary<T>): fc.Arbitrary<unknown> {
  return fc.tuple(valid, fc.array(step, { minLength: 1, maxLength: 3 })).map(([body, steps]) => {
    let out: unknown = structuredClone(body);
    for (const s of steps) out = apply(out, s);
    return out;
  });
}

/** Valid bodies as they are, mutations of them, and arbitrary JSON. */
export function hostile<T>(valid: fc.Arbitrary<T>): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 3, arbitrary: valid as fc.Arbitrary<unknown> },
    { weight: 5, arbitrary: mutated(valid) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
    { weight: 1, arbitrary: hostileValue },
  );
}

/** Runs of every property test; FAST_CHECK_RUNS overrides for a longer hunt. */
export const numRuns = (n: number) => Number(process.env.FAST_CHECK_RUNS ?? n);
