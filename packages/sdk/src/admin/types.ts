// The admin client's shape, derived from the route contracts: one method per admin or root
// operation, nested by its dotted operationId (`segments.members.put` → `admin.segments.members.put`).
import type { AnyContract, BroadcastResource, ContractBody, ContractParams, ContractQuery, ContractResponse } from "@tidings/schema";
import type { Paginated } from "./paginate.js";

/** The operations the admin client covers: those taking an admin API key or the root key. */
export type AdminContract = Extract<AnyContract, { auth: "admin" | "root" }>;
export type AdminOperationId = AdminContract["operationId"];
export type AdminContractOf<Id extends AdminOperationId> = Extract<AdminContract, { operationId: Id }>;

type PathParamNames<P extends string> = P extends `${string}{${infer N}}${infer R}` ? [N, ...PathParamNames<R>] : [];
type ParamValues<Names extends unknown[], P> = Names extends [infer N, ...infer R] ? [P[N & keyof P], ...ParamValues<R, P>] : [];

/** Path parameters come first, positionally, in the order the path names them. */
type ParamArgs<C extends AdminContract> = ParamValues<PathParamNames<C["path"]>, NonNullable<ContractParams<C>>>;
/** Then the body, where the operation takes one (optional when every field is). */
type BodyArgs<C extends AdminContract> = "body" extends keyof C
  ? undefined extends ContractBody<C>
    ? [body?: ContractBody<C>]
    : [body: ContractBody<C>]
  : [];
/** Then the query: filters, `limit`, `cursor`, `workspaceId`. */
type QueryArgs<C extends AdminContract> = "query" extends keyof C
  ? // biome-ignore lint/complexity/noBannedTypes: `{}` here means "every field is optional"
    {} extends ContractQuery<C>
    ? [query?: ContractQuery<C>]
    : [query: ContractQuery<C>]
  : [];

export type AdminArgs<C extends AdminContract> = [...ParamArgs<C>, ...BodyArgs<C>, ...QueryArgs<C>];

/** The parsed success response of an operation: `AdminResponse<"segments.get">` is a segment. */
export type AdminResponse<Id extends AdminOperationId> = ContractResponse<AdminContractOf<Id>>;
/** The body an operation takes: `AdminBody<"segments.upsert">`. */
export type AdminBody<Id extends AdminOperationId> = ContractBody<AdminContractOf<Id>>;
/** The query an operation takes: `AdminQuery<"deliveries.list">`. */
export type AdminQuery<Id extends AdminOperationId> = ContractQuery<AdminContractOf<Id>>;
/** An item of a list operation's pages: `AdminItem<"users.list">`. */
export type AdminItem<Id extends AdminOperationId> = AdminResponse<Id> extends ListPage<infer Item> ? Item : never;

/** A page of a list operation. */
export interface ListPage<Item> {
  items: Item[];
  nextCursor: string | null;
}

/** Lists (a response with `items` and `nextCursor`) iterate over every page; the others resolve to the parsed response. */
export type AdminResult<C extends AdminContract> =
  ContractResponse<C> extends ListPage<infer Item> ? Paginated<Item, ContractResponse<C>> : Promise<ContractResponse<C>>;

export type AdminMethod<C extends AdminContract> = (...args: AdminArgs<C>) => AdminResult<C>;

type Entry = { key: string; c: AdminContract };
type Entries = AdminContract extends infer C ? (C extends AdminContract ? { key: C["operationId"]; c: C } : never) : never;
type HeadOf<K extends string> = K extends `${infer A}.${string}` ? A : K;
type LeafAt<E extends Entry, H extends string> = E extends { key: H } ? E["c"] : never;
type Below<E extends Entry, H extends string> = E extends { key: `${H}.${infer R}` } ? { key: R; c: E["c"] } : never;
type Tree<E extends Entry> = {
  [H in HeadOf<E["key"]>]: ([LeafAt<E, H>] extends [never] ? unknown : AdminMethod<LeafAt<E, H>>) &
    ([Below<E, H>] extends [never] ? unknown : Tree<Below<E, H>>);
};

export interface WaitOptions {
  /** Between two polls. Default 1000 ms. */
  intervalMs?: number;
  /** Give up (TidingsApiError with code TIMEOUT) after this long. Default: wait as long as it takes. */
  timeoutMs?: number;
  /** Called with the broadcast after every poll, the last (finished) one included. */
  onProgress?: (broadcast: BroadcastResource) => void;
  signal?: AbortSignal;
}

/** Methods that are not one request: they combine operations. */
export interface AdminHelpers {
  broadcasts: {
    /** Polls `broadcasts.get` until the broadcast is Completed, Failed or Cancelled, and resolves to it. */
    wait(id: string, options?: WaitOptions): Promise<BroadcastResource>;
  };
}

/** Every admin operation as a method, nested by operationId, plus the helpers. */
export type AdminApi = Tree<Entries> & AdminHelpers;
