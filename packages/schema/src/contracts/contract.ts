// What a route contract is: one operation of the HTTP API, declared once. The server registers
// its route from it, /openapi.json is generated from it, and clients derive typed calls from it.
import type { z } from "zod";
import type { ErrorCode } from "../errors.js";

export type HttpMethod = "GET" | "POST" | "PUT" | "DELETE";

/**
 * The credential an operation takes: `admin` an admin API key (the request acts on the key's
 * workspace), `root` the root key, `write` a write key (ingestion), `none` nothing.
 */
export type AuthKind = "admin" | "root" | "write" | "none";

export interface Contract {
  /** Stable and unique, `<resource>.<action>` (e.g. `segments.upsert`); never renamed. */
  readonly operationId: string;
  readonly method: HttpMethod;
  /** OpenAPI form: path parameters as `{name}`. */
  readonly path: string;
  readonly auth: AuthKind;
  readonly tags: readonly string[];
  readonly summary: string;
  readonly description?: string;
  readonly params?: z.ZodObject;
  readonly query?: z.ZodObject;
  /** The request body. A schema that accepts `undefined` makes the body optional. */
  readonly body?: z.ZodType;
  /**
   * `false` when the handler parses the body itself (ingestion: Segment-spec bodies with
   * per-item issue paths and size limits): the body is documented, not validated by the framework.
   */
  readonly validateBody?: boolean;
  readonly success: {
    readonly status: 200 | 201 | 202 | 204;
    readonly description: string;
    /** The response body; absent for 204 (and for a body the server does not describe). */
    readonly schema?: z.ZodType;
    /** Defaults to `application/json`. */
    readonly contentType?: string;
  };
  /** Error codes the operation can answer, each with its status and the ErrorResponse envelope. */
  readonly errors: readonly ErrorCode[];
  /** Served but left out of the OpenAPI document (the document itself). */
  readonly hidden?: boolean;
}

/** Declares a contract, keeping its literal types (operationId, path, schemas) for inference. */
export const defineContract = <const C extends Contract>(contract: C): C => contract;

/**
 * The errors every admin operation can answer, plus `extra` (e.g. `NOT_FOUND`, `CONFLICT`).
 * `UNAVAILABLE`: overloaded, or the database cannot be reached.
 */
export const adminErrors = <const E extends ErrorCode[]>(...extra: E) =>
  ["VALIDATION_FAILED", "UNAUTHORIZED", "FORBIDDEN", ...extra, "UNAVAILABLE", "INTERNAL"] as const;

/** The errors every ingestion operation can answer. */
export const ingestErrors = [
  "VALIDATION_FAILED",
  "UNAUTHORIZED",
  "PAYLOAD_TOO_LARGE",
  "UNSUPPORTED_MEDIA_TYPE",
  "RATE_LIMITED",
  "UNAVAILABLE",
  "INTERNAL",
] as const satisfies readonly ErrorCode[];

// --- Types a client or a server derives from a contract ---------------------------------------

type In<S> = S extends z.ZodType ? z.input<S> : undefined;
type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

/** Path parameters a caller sends (`{}` shaped by `params`; undefined when the path has none). */
export type ContractParams<C extends Contract> = In<C["params"]>;
/** Query parameters a caller sends. */
export type ContractQuery<C extends Contract> = In<C["query"]>;
/** The body a caller sends. */
export type ContractBody<C extends Contract> = In<C["body"]>;
/** The success response a caller receives (undefined for 204). */
export type ContractResponse<C extends Contract> = Out<C["success"]["schema"]>;

/** What the server's handler receives after validation. */
export interface ContractRequest<C extends Contract> {
  params: Out<C["params"]>;
  query: Out<C["query"]>;
  body: C["validateBody"] extends false ? unknown : Out<C["body"]>;
}
/** What the server's handler returns: the response before serialization. */
export type ContractResult<C extends Contract> = C["success"]["schema"] extends z.ZodType
  ? z.output<C["success"]["schema"]>
  : // biome-ignore lint/suspicious/noConfusingVoidType: a 204 handler may end without a return
    undefined | void;
