// The LiquidJS engines of the server, configured for templates written by admins and data sent
// by end users: no file system, own properties only, unknown filters are errors, and the DoS
// limits liquidjs offers (template size, render time, counted allocations), here one budget per
// message for all its fields together. `liquid` renders every field but an Email `body`, which
// `htmlLiquid` renders with every output HTML-escaped. This runs in the render threads
// (render-pool.ts), never on the server's event loop.
import type { ErrorIssue, MessageTemplateDefinition, RenderedFields } from "@tidings/schema";
import { Context, filters, Liquid, type LiquidOptions } from "liquidjs";
import { errorText } from "../lib/errors.ts";

/** Cap on the rendered size of a whole message, on top of the memory budget. */
export const MAX_RENDERED_CHARS = 1_000_000;

/** What rendering one message may spend, all its fields together. */
export interface RenderBudget {
  /** Milliseconds of rendering. */
  timeMs: number;
  /** liquidjs's counted allocations (about characters and array items). */
  memory: number;
}

const options: LiquidOptions = {
  // An empty in-memory file map: {% include %}, {% render %} and {% layout %} find nothing and
  // can never read the server's disk.
  templates: {},
  relativeReference: false,
  ownPropertyOnly: true,
  strictFilters: true,
  strictVariables: false,
  cache: false,
  // The `date` filter renders in UTC whatever the server's time zone, so replicas agree.
  timezoneOffset: 0,
  parseLimit: 1_000_000,
  // Per field, as liquidjs applies them; renderFields applies one budget across a message's fields.
  renderLimit: 1_000,
  memoryLimit: 10_000_000,
};

export const liquid = new Liquid(options);

/**
 * The engine of an Email `body`: every `{{ … }}` (and `{% echo %}`, `{% cycle %}`) output is
 * HTML-escaped, so a trait like `<script>` arrives as text. An admin outputs trusted HTML
 * deliberately with `| raw` as the last filter (`{{ user.bio_html | raw }}`). `escape`,
 * `escape_once` and `xml_escape` already escape, so they count as raw here and `{{ x | escape }}`
 * is not escaped twice. Escaping applies to each output, so a `{% capture %}`d variable holds
 * escaped text: print it with `{{ captured | raw }}`. Trait values are never parsed as Liquid.
 */
export const htmlLiquid = new Liquid({ ...options, outputEscape: "escape" });
for (const name of ["escape", "escape_once", "xml_escape"]) {
  const handler = filters[name];
  if (typeof handler !== "function") throw new Error(`liquidjs has no ${name} filter`);
  htmlLiquid.registerFilter(name, { handler, raw: true });
}

/** The engine that renders a field: Email `body` is HTML, everything else is text. */
export const engineFor = (definition: MessageTemplateDefinition, path: readonly string[]): Liquid =>
  definition.type === "Email" && path.length === 1 && path[0] === "body" ? htmlLiquid : liquid;

/** The Liquid fields of a definition as [path, text]; `type` and webhook `method` are not templates. */
function* liquidFields(definition: MessageTemplateDefinition): Generator<[string[], string]> {
  for (const [key, value] of Object.entries(definition)) {
    if (key === "type" || key === "method") continue;
    if (typeof value === "string") yield [[key], value];
    else if (value && typeof value === "object") {
      for (const [name, text] of Object.entries(value as Record<string, unknown>)) {
        if (typeof text === "string") yield [[key, name], text];
      }
    }
  }
}

/** One issue per field whose Liquid does not parse, paths prefixed (e.g. `definition.subject`). */
export function liquidSyntaxIssues(prefix: string, definition: MessageTemplateDefinition): ErrorIssue[] {
  const issues: ErrorIssue[] = [];
  for (const [path, text] of liquidFields(definition)) {
    try {
      liquid.parse(text);
    } catch (err) {
      issues.push({ path: [prefix, ...path].join("."), message: `Liquid syntax error: ${errorText(err)}` });
    }
  }
  return issues;
}

export interface RenderScope {
  user: Record<string, unknown> & { id: string };
  event?: Record<string, unknown> | undefined;
  workspace: { id: string; name: string };
  unsubscribe_url: string;
}

const hasMarkup = (text: string) => text.includes("{{") || text.includes("{%");

/** Parsed templates by engine and text: a broadcast renders one template for every member. */
const parsed = new Map<Liquid, Map<string, ReturnType<Liquid["parse"]>>>();
const PARSED_MAX = 2000;
function parseCached(engine: Liquid, text: string) {
  let byText = parsed.get(engine);
  if (!byText) {
    byText = new Map();
    parsed.set(engine, byText);
  }
  let templates = byText.get(text);
  if (!templates) {
    templates = engine.parse(text);
    if (byText.size >= PARSED_MAX) byText.clear();
    byText.set(text, templates);
  }
  return templates;
}

export interface UnresolvedVariable {
  /** The field, e.g. `definition.body`. */
  path: string;
  /** The variable as written, e.g. `user.userId`. */
  variable: string;
}

/** The value at `segments` in the scope (own properties only, as the engines read), or undefined. */
function lookup(scope: RenderScope, segments: readonly (string | number)[]): unknown {
  let value: unknown = scope;
  for (const segment of segments) {
    if (value === null || typeof value !== "object" || !Object.hasOwn(value, segment)) return undefined;
    value = (value as Record<string | number, unknown>)[segment];
  }
  return value;
}

/**
 * The variables of each field that resolve to nothing (undefined or null) in `scope`:
 * `{{ user.userId }}` renders as an empty string, and this says so. LiquidJS's static analysis
 * lists the variables a template reads from its scope (not those it assigns itself); a segment
 * that is itself a variable (`user[key]`) is not followed.
 */
export function unresolvedVariables(
  definition: MessageTemplateDefinition,
  scope: RenderScope,
  prefix = "definition",
): UnresolvedVariable[] {
  const out: UnresolvedVariable[] = [];
  for (const [path, text] of liquidFields(definition)) {
    if (!hasMarkup(text)) continue;
    const engine = engineFor(definition, path);
    const seen = new Set<string>();
    for (const segments of engine.globalVariableSegmentsSync(parseCached(engine, text))) {
      if (!segments.every((s) => typeof s === "string" || typeof s === "number")) continue;
      const plain = segments as (string | number)[];
      const variable = plain.map((s, i) => (typeof s === "number" ? `[${s}]` : i === 0 ? s : `.${s}`)).join("");
      if (seen.has(variable)) continue;
      seen.add(variable);
      const value = lookup(scope, plain);
      if (value === undefined || value === null) out.push({ path: [prefix, ...path].join("."), variable });
    }
  }
  return out;
}

/**
 * liquidjs's Limiter contract (`use` adds to a total, `check` compares a value with the limit),
 * shared by every field of one message so the message has one budget.
 */
class Budget {
  private used = 0;
  constructor(
    private readonly what: string,
    private readonly limit: number,
  ) {}
  use(count: number) {
    if (+count > 0) {
      if (this.used + +count > this.limit) throw new Error(`${this.what} limit of the message exceeded`);
      this.used += +count;
    }
  }
  check(count: number) {
    if (+count > 0 && +count > this.limit) throw new Error(`${this.what} limit of the message exceeded`);
  }
}

export type RenderOutcome = { ok: true; rendered: RenderedFields } | { ok: false; message: string; issues: ErrorIssue[] };

/**
 * Renders every Liquid field of a definition within one time and memory budget for the whole
 * message; map fields stay maps. Parse and render errors, and a budget run out, name the field
 * under `prefix`.
 */
export function renderFields(
  definition: MessageTemplateDefinition,
  scope: RenderScope,
  budget: RenderBudget,
  prefix = "definition",
): RenderOutcome {
  const rendered: RenderedFields = {};
  const issues: ErrorIssue[] = [];
  const memoryLimit = new Budget("memory", budget.memory);
  const renderLimit = new Budget("time", performance.now() + budget.timeMs);
  let total = 0;
  if (definition.type === "Webhook") rendered.method = definition.method;
  for (const [key, value] of Object.entries(definition)) {
    if (value && typeof value === "object") rendered[key] = {};
  }
  for (const [path, text] of liquidFields(definition)) {
    let out: string;
    try {
      const engine = engineFor(definition, path);
      if (hasMarkup(text)) {
        // biome-ignore lint/suspicious/noExplicitAny: liquidjs types its limiters as its own (unexported) Limiter class
        const limits = { memoryLimit, renderLimit, liquid: engine } as any;
        const ctx = new Context(scope, engine.options, { sync: true }, limits);
        out = String(engine.renderSync(parseCached(engine, text), ctx));
      } else out = text;
    } catch (err) {
      issues.push({ path: [prefix, ...path].join("."), message: `Liquid error: ${errorText(err)}` });
      if (/limit of the message exceeded/.test(errorText(err))) break;
      continue;
    }
    total += out.length;
    const [key, name] = path as [string, string | undefined];
    if (name === undefined) rendered[key] = out;
    else {
      const map = rendered[key];
      if (typeof map === "object") map[name] = out;
    }
  }
  if (issues.length) return { ok: false, message: "The template does not render", issues };
  if (total > MAX_RENDERED_CHARS) {
    return {
      ok: false,
      message: "The rendered message is too large",
      issues: [{ path: prefix, message: `renders to ${total} characters; the limit is ${MAX_RENDERED_CHARS}` }],
    };
  }
  return { ok: true, rendered };
}
