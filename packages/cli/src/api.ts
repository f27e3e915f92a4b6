// The CLI's one way to the HTTP API. Admin and root operations go through the SDK's
// `TidingsAdmin` (typed by the route contracts of @tidings/schema), single events through its
// `Tidings` client; bulk import posts pre-serialized batches itself (see postRaw).
import {
  type AnyContract,
  type BroadcastResource,
  type ContractOf,
  type ContractResponse,
  contractsById,
  type OperationId,
} from "@tidings/schema";
import { type AdminOperationId, isTidingsApiError, Tidings, TidingsAdmin, type TidingsEvent } from "@tidings/sdk";
import { ApiError, UsageError } from "./errors.js";
import { toApiError } from "./http-errors.js";

export interface Connection {
  host: string;
  apiKey?: string | undefined;
  workspaceId?: string | undefined;
  writeKey?: string | undefined;
  rootKey?: string | undefined;
}

/** What a call sends: path parameters, query and body (types from the operation's contract). */
export interface CallInput {
  params?: Record<string, string>;
  query?: Record<string, unknown>;
  body?: unknown;
}

/** What the caller needs to do to supply each kind of key. */
const missingKey = {
  admin: "no admin API key: pass --api-key, set TIDINGS_API_KEY or run `tidings login`",
  write: "no write key: pass --write-key, set TIDINGS_WRITE_KEY or run `tidings login --write-key …`",
  root: "no root key: pass --root-key or set TIDINGS_ROOT_KEY",
};

export class Api {
  private readonly clients = new Map<"admin" | "root", TidingsAdmin>();

  constructor(
    readonly connection: Connection,
    private readonly userAgent: string,
  ) {}

  /** Calls one admin or root operation; resolves to its parsed success body (undefined for 204). */
  async call<Id extends AdminOperationId & OperationId>(operationId: Id, input: CallInput = {}): Promise<ContractResponse<ContractOf<Id>>> {
    const contract = contractsById[operationId] as AnyContract;
    const client = this.admin(contract.auth === "root" ? "root" : "admin");
    try {
      return (await client.request(operationId, input as never)) as ContractResponse<ContractOf<Id>>;
    } catch (err) {
      throw this.explain(err);
    }
  }

  /** Polls a broadcast until it completes, fails or is cancelled. */
  async waitForBroadcast(id: string, onProgress: (b: BroadcastResource) => void): Promise<BroadcastResource> {
    try {
      return await this.admin("admin").broadcasts.wait(id, { intervalMs: 300, onProgress });
    } catch (err) {
      throw this.explain(err);
    }
  }

  /** Sends one event with the write key; rejects with the server's (or the SDK's) error. */
  async sendEvent(event: Record<string, unknown> & { type: TidingsEvent["type"] }): Promise<void> {
    const writeKey = this.connection.writeKey;
    if (!writeKey) throw new UsageError(missingKey.write);
    let failure: unknown;
    const client = new Tidings({
      host: this.connection.host,
      writeKey,
      maxRetries: 1,
      onError: (err) => {
        failure ??= err;
      },
    });
    const { type, ...body } = event;
    (client[type] as (e: object) => void)(body);
    await client.close();
    if (isTidingsApiError(failure) && failure.code !== "NETWORK") {
      // The client sends a batch of one: `batch.0.event` is the event's `event`.
      const issues = failure.issues.map((i) => ({ path: i.path.replace(/^batch\.0\.?/, ""), message: i.message }));
      throw new ApiError(failure.status, failure.code, failure.message, failure.requestId, issues);
    }
    if (failure) throw this.explain(failure);
  }

  /**
   * Posts an already serialized batch (bulk import: the lines' own JSON, not re-serialized, and
   * every answer handed back so rejected lines can be told apart). Resolves with the status and
   * the parsed error for any HTTP answer; rejects only when the server cannot be reached.
   */
  async postRaw(body: string): Promise<{ status: number; error?: ApiError; retryAfter?: number }> {
    const writeKey = this.connection.writeKey;
    if (!writeKey) throw new UsageError(missingKey.write);
    const url = new URL(contractsById["ingest.batch"].path, `${this.connection.host}/`);
    let res: Response;
    try {
      res = await fetch(url, {
        method: "POST",
        headers: {
          authorization: `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}`,
          "content-type": "application/json",
          "user-agent": this.userAgent,
        },
        body,
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw new ApiError(
        0,
        "NETWORK",
        `cannot reach ${this.connection.host}: ${cause?.code ?? cause?.message ?? (err as Error).message}`,
        undefined,
      );
    }
    if (res.status < 300) {
      await res.arrayBuffer();
      return { status: res.status };
    }
    const text = await res.text();
    const retryAfter = Number(res.headers.get("retry-after"));
    return {
      status: res.status,
      error: toApiError(res.status, text, res.headers.get("x-request-id")),
      ...(Number.isFinite(retryAfter) && retryAfter > 0 ? { retryAfter } : {}),
    };
  }

  private admin(kind: "admin" | "root"): TidingsAdmin {
    let client = this.clients.get(kind);
    if (!client) {
      const key = kind === "root" ? this.connection.rootKey : this.connection.apiKey;
      if (!key) throw new UsageError(missingKey[kind]);
      // A CLI answers promptly: one retry of an idempotent call, not the SDK's patient default.
      client = new TidingsAdmin({
        host: this.connection.host,
        apiKey: key,
        ...(kind === "admin" && this.connection.workspaceId ? { workspaceId: this.connection.workspaceId } : {}),
        maxRetries: 1,
        retryBaseDelayMs: 200,
      });
      this.clients.set(kind, client);
    }
    return client;
  }

  /** A network failure names the host; other errors pass through (they carry status, code, issues, request id). */
  private explain(err: unknown): unknown {
    if (isTidingsApiError(err) && err.code === "NETWORK") {
      return new ApiError(0, "NETWORK", `cannot reach ${this.connection.host}: ${err.message.replace(/^Network error: /, "")}`, undefined);
    }
    return err;
  }
}
