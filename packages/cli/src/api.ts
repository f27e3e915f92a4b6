// The CLI's one way to the HTTP API: the SDK. Admin and root operations go through its
// `TidingsAdmin` (typed by the route contracts of @tidings/schema), events through its `Tidings`
// client's `sendBatch` (one event for `events send`, a file's batches for `events import`), so
// requests, retries and the error envelope are the SDK's, and every API error a `TidingsApiError`.
import {
  type AnyContract,
  type BroadcastResource,
  type ContractOf,
  type ContractResponse,
  contractsById,
  type OperationId,
} from "@tidings/schema";
import {
  type AdminOperationId,
  type BatchResult,
  isTidingsApiError,
  Tidings,
  TidingsAdmin,
  TidingsApiError,
  type TidingsEventInput,
} from "@tidings/sdk";
import { UsageError } from "./errors.js";

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
  private readonly writers = new Map<"event" | "import", Tidings>();

  constructor(readonly connection: Connection) {}

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

  /** Sends one event with the write key; rejects with the server's (or the SDK's) error, its issues relative to the event. */
  async sendEvent(event: TidingsEventInput): Promise<void> {
    const { rejected, undelivered } = await this.writer("event").sendBatch([event]);
    const failure = rejected[0] ?? undelivered[0];
    if (failure) throw this.explain(failure.error);
  }

  /**
   * Sends events already serialized (bulk import: the lines' own JSON, not re-serialized) and
   * resolves with what became of each: accepted, rejected for what it holds, or undelivered once
   * the retries are spent.
   */
  async sendEvents(events: readonly string[]): Promise<BatchResult> {
    const result = await this.writer("import").sendBatch(events);
    return { ...result, undelivered: result.undelivered.map(({ index, error }) => ({ index, error: this.explain(error) })) };
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

  private writer(kind: "event" | "import"): Tidings {
    let client = this.writers.get(kind);
    if (!client) {
      const writeKey = this.connection.writeKey;
      if (!writeKey) throw new UsageError(missingKey.write);
      client = new Tidings({
        host: this.connection.host,
        writeKey,
        path: contractsById["ingest.batch"].path,
        // One event is answered promptly (one retry); an import waits out an overloaded server,
        // in requests of up to 500 events (--batch-size cuts them smaller).
        ...(kind === "event" ? { maxRetries: 1 } : { maxRetries: 10, retryMaxDelayMs: 10_000, maxBatchEvents: 500 }),
        // sendBatch answers for every event; the client's queue is not used.
        onError: () => {},
      });
      this.writers.set(kind, client);
    }
    return client;
  }

  /** A network failure names the host; other errors pass through (they carry status, code, issues, request id). */
  private explain<E>(err: E): E | TidingsApiError {
    if (isTidingsApiError(err) && err.code === "NETWORK") {
      const detail = err.message.replace(/^(Network error|Cannot reach \S+): /, "");
      return new TidingsApiError(0, "NETWORK", `cannot reach ${this.connection.host}: ${detail}`, undefined, [], { cause: err });
    }
    return err;
  }
}
