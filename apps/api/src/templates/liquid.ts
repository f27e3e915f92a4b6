// The LiquidJS engines of the server, configured for templates written by admins and data sent
// by end users: no file system, own properties only, unknown filters are errors, and the DoS
// limits liquidjs offers (template size, render time, counted allocations). `liquid` renders
// every field but an Email `body`, which `htmlLiquid` renders with every output HTML-escaped.
import type { ErrorIssue, MessageTemplateDefinition, RenderedFields } from "@tidings/schema";
import { filters, Liquid, type LiquidOptions } from "liquidjs";
import { badRequest } from "../http/errors.ts";

/** Cap on the rendered size of a whole message, on top of liquidjs's memoryLimit. */
export const MAX_RENDERED_CHARS = 1_000_000;

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

const errorMessage = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** One issue per field whose Liquid does not parse, paths prefixed (e.g. `definition.subject`). */
export function liquidSyntaxIssues(prefix: string, definition: MessageTemplateDefinition): ErrorIssue[] {
  const issues: ErrorIssue[] = [];
  for (const [path, text] of liquidFields(definition)) {
    try {
      liquid.parse(text);
    } catch (err) {
      issues.push({ path: [prefix, ...path].join("."), message: `Liquid syntax error: ${errorMessage(err)}` });
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
 * Renders every Liquid field of a definition; map fields stay maps. Parse and render errors are
 * a 400 naming the field under `prefix`.
 */
export async function renderDefinition(
  definition: MessageTemplateDefinition,
  scope: RenderScope,
  prefix = "definition",
): Promise<RenderedFields> {
  const rendered: RenderedFields = {};
  const issues: ErrorIssue[] = [];
  let total = 0;
  if (definition.type === "Webhook") rendered.method = definition.method;
  for (const [key, value] of Object.entries(definition)) {
    if (value && typeof value === "object") rendered[key] = {};
  }
  for (const [path, text] of liquidFields(definition)) {
    let out: string;
    try {
      const engine = engineFor(definition, path);
      // Text without Liquid markup is itself. Rendering is synchronous: no tag or filter of these
      // engines waits for anything, and a promise per node costs a broadcast more than the work.
      out = hasMarkup(text) ? String(engine.renderSync(parseCached(engine, text), scope)) : text;
    } catch (err) {
      issues.push({ path: [prefix, ...path].join("."), message: `Liquid error: ${errorMessage(err)}` });
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
  if (issues.length) throw badRequest("The template does not render", issues);
  if (total > MAX_RENDERED_CHARS) {
    throw badRequest("The rendered message is too large", [
      { path: prefix, message: `renders to ${total} characters; the limit is ${MAX_RENDERED_CHARS}` },
    ]);
  }
  return rendered;
}
