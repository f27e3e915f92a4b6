// The admin client: its methods are built at construction from `contracts` in @tidings/schema
// (every operation taking an admin API key or the root key), so no route lacks its method, and
// each response is parsed with the operation's success schema.
import { type BroadcastResource, type ContractResponse, contracts, type ErrorIssue } from "@tidings/schema";
import { TidingsApiError } from "../errors.js";
import { type FetchLike, type HttpResponse, lazyTransport, parseJson, sendWithRetry, sleep } from "../http.js";
import { Paginated } from "./paginate.js";
import type { AdminApi, AdminContract, AdminContractOf, AdminOperationId, WaitOptions } from "./types.js";

export interface TidingsAdminOptions {
  /** An admin API key (acts on its workspace), or the root key for `workspaces.*`. Sent as `Bearer`. */
  apiKey: string;
  /** Base URL of the server, e.g. `https://tidings.example.com` (a path prefix is kept). */
  host: string;
  /** Filled in as `workspaceId` wherever an operation takes one and the call gives none. */
  workspaceId?: string;
  /** Retries of an idempotent call (GET, PUT, DELETE) answered 429 or 503, or failing before any answer. Default 3. */
  maxRetries?: number;
  /** Backoff base when the server sends no Retry-After. Default 500 ms. */
  retryBaseDelayMs?: number;
  /** Backoff cap. Default 10 000 ms. */
  retryMaxDelayMs?: number;
  /** Per request. Default 30 000 ms. */
  timeoutMs?: number;
  /** A `fetch` to use instead of undici (edge runtimes, tests, instrumentation). */
  fetch?: FetchLike;
}

export const ADMIN_DEFAULTS = { maxRetries: 3, retryBaseDelayMs: 500, retryMaxDelayMs: 10_000, timeoutMs: 30_000 } as const;

/** What `request` takes: the operation's path parameters, query and body. */
export interface AdminRequestInput {
  params?: Record<string, string | number>;
  query?: Record<string, unknown>;
  body?: unknown;
}

const TERMINAL = new Set(["Completed", "Failed", "Cancelled"]);

interface ZodLike {
  safeParse(
    value: unknown,
  ): { success: true; data: unknown } | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } };
}

/** The object schema(s) inside optional/nullable/default/pipe wrappers and unions. */
function objectShapes(schema: unknown, depth = 0): Record<string, unknown>[] {
  const s = schema as {
    shape?: Record<string, unknown>;
    options?: unknown[];
    unwrap?: () => unknown;
    def?: { innerType?: unknown; in?: unknown };
  } | null;
  if (!s || depth > 8) return [];
  if (s.shape && typeof s.shape === "object") return [s.shape];
  if (Array.isArray(s.options)) return s.options.flatMap((o) => objectShapes(o, depth + 1));
  const inner = typeof s.unwrap === "function" ? s.unwrap() : (s.def?.innerType ?? s.def?.in);
  return inner ? objectShapes(inner, depth + 1) : [];
}

const takesWorkspaceId = (schema: unknown) => objectShapes(schema).some((shape) => "workspaceId" in shape);
const isList = (schema: unknown) => objectShapes(schema).some((shape) => "items" in shape && "nextCursor" in shape);
const isPlainObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

function queryString(query: Record<string, unknown> | undefined): string {
  if (!query) return "";
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null) continue;
    for (const item of Array.isArray(v) ? v : [v]) q.append(k, String(item));
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}

const issuesOf = (error: { issues: { path: PropertyKey[]; message: string }[] }): ErrorIssue[] =>
  error.issues.map((i) => ({ path: i.path.map(String).join(".") || "(body)", message: i.message }));

class TidingsAdminClient {
  private readonly base: string;
  private readonly headers: Record<string, string>;
  private readonly o: Required<Omit<TidingsAdminOptions, "workspaceId" | "fetch">> & Pick<TidingsAdminOptions, "workspaceId">;
  private readonly transport: ReturnType<typeof lazyTransport>;

  constructor(options: TidingsAdminOptions) {
    if (!options || typeof options.apiKey !== "string" || options.apiKey === "") throw new TypeError("TidingsAdmin: apiKey is required");
    if (typeof options.host !== "string" || !/^https?:\/\//.test(options.host))
      throw new TypeError("TidingsAdmin: host must be an http(s) URL");
    this.o = {
      ...ADMIN_DEFAULTS,
      ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)),
    } as TidingsAdminClient["o"];
    this.base = options.host.replace(/\/+$/, "");
    this.headers = { authorization: `Bearer ${options.apiKey}`, accept: "application/json" };
    this.transport = lazyTransport(options.fetch);

    const root: Record<string, unknown> = {};
    for (const c of contracts) {
      if (c.auth !== "admin" && c.auth !== "root") continue;
      attach(root, c.operationId.split("."), this.method(c));
    }
    const broadcasts = root.broadcasts as Record<string, unknown>;
    broadcasts.wait = (id: string, opts?: WaitOptions) => this.waitForBroadcast(id, opts);
    for (const key of Object.keys(root)) {
      if (key in this) throw new Error(`TidingsAdmin: operation namespace ${key} collides with a client member`);
    }
    Object.assign(this, root);
  }

  /**
   * Calls one operation by operationId (one page for a list): what every method does. `params`
   * fill the path, `query` and `body` are sent as given (plus `workspaceId`).
   */
  request<Id extends AdminOperationId>(operationId: Id, input: AdminRequestInput = {}): Promise<ContractResponse<AdminContractOf<Id>>> {
    const c = contracts.find((x) => x.operationId === operationId && (x.auth === "admin" || x.auth === "root")) as
      | AdminContract
      | undefined;
    if (!c) return Promise.reject(new TypeError(`TidingsAdmin: unknown admin operation ${operationId}`));
    return this.call(c, input.params ?? {}, input.body, input.query) as Promise<ContractResponse<AdminContractOf<Id>>>;
  }

  /** Releases the keep-alive connections. */
  close(): Promise<void> {
    return this.transport.close();
  }

  private method(c: AdminContract) {
    const names = [...c.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
    const hasBody = "body" in c && c.body !== undefined;
    const hasQuery = "query" in c && c.query !== undefined;
    const list = isList((c.success as { schema?: unknown }).schema);
    return (...args: unknown[]) => {
      const params = Object.fromEntries(names.map((n, i) => [n, args[i]]));
      let k = names.length;
      const body = hasBody ? args[k++] : undefined;
      const query = hasQuery ? (args[k++] as Record<string, unknown> | undefined) : undefined;
      if (!list) return this.call(c, params, body, query);
      const start = typeof query?.cursor === "string" ? query.cursor : undefined;
      return new Paginated((cursor) => this.call(c, params, body, { ...query, cursor }) as Promise<never>, start);
    };
  }

  private async call(c: AdminContract, params: Record<string, unknown>, body: unknown, query: Record<string, unknown> | undefined) {
    const path = c.path.replace(/\{(\w+)\}/g, (_, name: string) => {
      const v = params[name];
      if (v === undefined || v === null || v === "") throw new TypeError(`${c.operationId}: the path parameter ${name} is required`);
      return encodeURIComponent(String(v));
    });
    const ws = this.o.workspaceId;
    if (ws !== undefined && "query" in c && c.query !== undefined && takesWorkspaceId(c.query) && query?.workspaceId === undefined) {
      query = { ...query, workspaceId: ws };
    }
    if (ws !== undefined && "body" in c && takesWorkspaceId(c.body) && (body === undefined || body === null || isPlainObject(body))) {
      if (!isPlainObject(body) || body.workspaceId === undefined) body = { ...(body as object | null), workspaceId: ws };
    }
    const headers = { ...this.headers };
    if (body !== undefined) headers["content-type"] = "application/json";
    const req = {
      method: c.method,
      url: `${this.base}${path}${queryString(query)}`,
      headers,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      timeoutMs: this.o.timeoutMs,
    };
    // POST is not retried: it may have had its effect before the answer was lost.
    const idempotent = c.method !== "POST";
    const transport = await this.transport.ready();
    const res = await sendWithRetry(transport, () => req, {
      maxRetries: idempotent ? this.o.maxRetries : 0,
      retryBaseDelayMs: this.o.retryBaseDelayMs,
      retryMaxDelayMs: this.o.retryMaxDelayMs,
      retryable: (status) => status === 429 || status === 503,
    });
    if (res.status >= 200 && res.status < 300) return this.parse(c, res);
    throw withIdHint(c, TidingsApiError.fromResponse(res.status, parseJson(res.body), res.header("x-request-id")));
  }

  private parse(c: AdminContract, res: HttpResponse): unknown {
    const schema = (c.success as { schema?: unknown }).schema as ZodLike | undefined;
    if (!schema || res.status === 204) return undefined;
    const parsed = schema.safeParse(parseJson(res.body));
    if (parsed.success) return parsed.data;
    const issues = issuesOf(parsed.error);
    const first = issues[0] ? ` (${issues[0].path}: ${issues[0].message})` : "";
    throw new TidingsApiError(
      res.status,
      "INVALID_RESPONSE",
      `${c.operationId}: the response does not match its schema${first}`,
      res.header("x-request-id") ?? undefined,
      issues,
    );
  }

  private async waitForBroadcast(id: string, options: WaitOptions = {}): Promise<BroadcastResource> {
    const { intervalMs = 1000, timeoutMs, onProgress, signal } = options;
    const deadline = timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + timeoutMs;
    const get = (this as unknown as AdminApi).broadcasts.get;
    for (;;) {
      signal?.throwIfAborted();
      const broadcast = await get(id);
      onProgress?.(broadcast);
      if (TERMINAL.has(broadcast.status)) return broadcast;
      if (Date.now() + intervalMs > deadline) {
        throw new TidingsApiError(0, "TIMEOUT", `Broadcast ${id} is still ${broadcast.status} after ${timeoutMs} ms`, undefined);
      }
      await sleep(intervalMs, signal);
    }
  }
}

/** The CLI commands that take a name where the API takes an id. */
const CLI_BY_NAMESPACE: Record<string, string> = {
  segments: "segments",
  templates: "templates",
  journeys: "journeys",
  subscriptionGroups: "subscription-groups",
};

/**
 * A path parameter that is not an id (`admin.segments.get("Pro users")`): the message says to pass
 * the id and where names are accepted.
 */
function withIdHint(c: AdminContract, err: TidingsApiError): TidingsApiError {
  const first = err.issues[0];
  if (err.code !== "VALIDATION_FAILED" || !first || !first.path.startsWith("params.") || !/uuid/i.test(first.message)) return err;
  const ns = c.operationId.split(".")[0]!;
  const cli = CLI_BY_NAMESPACE[ns];
  const list = c.operationId.split(".").length > 2 ? "" : ` or find it with admin.${ns}.list()`;
  const hint = cli
    ? ` — pass the id; names are accepted by the CLI (\`tidings ${cli} get <name>\`)${list}`
    : ` — pass the id${list ? `;${list.replace(" or", "")}` : ""}`;
  return new TidingsApiError(err.status, err.code, `${c.operationId}: ${first.path}: ${first.message}${hint}`, err.requestId, err.issues);
}

/** Puts `fn` at `path` in the tree; a method may also hold nested methods. */
function attach(root: Record<string, unknown>, path: string[], fn: (...args: unknown[]) => unknown) {
  let node = root;
  for (const key of path.slice(0, -1)) {
    node[key] ??= {};
    node = node[key] as Record<string, unknown>;
  }
  const last = path[path.length - 1]!;
  const existing = node[last];
  node[last] = existing === undefined ? fn : Object.assign(fn, existing);
}

export type TidingsAdmin = TidingsAdminClient & AdminApi;

/**
 * The admin API client: `new TidingsAdmin({apiKey, host})`, then one method per operation,
 * named by its operationId (`admin.segments.upsert(body)`, `admin.users.get(userId)`, …).
 */
export const TidingsAdmin = TidingsAdminClient as unknown as new (options: TidingsAdminOptions) => TidingsAdmin;
