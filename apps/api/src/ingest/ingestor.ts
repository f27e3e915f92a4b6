// Group commit: concurrent ingestion requests are gathered and committed together, and each
// request is acknowledged only after the transaction holding its events has committed.
// Nothing is acknowledged from memory: a crash loses only unacknowledged requests.
//
// A request's way through this directory: routes.ts → service.ts (validation) → normalize.ts →
// here (queue, groups, retries) → fast-path.ts (one statement, the common case) or
// transactional-path.ts (identity links, groups, replays), which send the rows of rows.ts to
// the statements of sql.ts.
import type pg from "pg";
import { ApiError } from "../lib/errors.ts";
import type { NormalizedEvent } from "./normalize.ts";
import { fitsOneStatement, storeInOneStatement } from "./fast-path.ts";
import type { WorkspaceEvent } from "./rows.ts";
import { storeInTransaction } from "./transactional-path.ts";

interface Pending {
  workspaceId: string;
  events: NormalizedEvent[];
  resolve: () => void;
  reject: (err: unknown) => void;
}

export interface IngestorOptions {
  /** Commits that may run at once (each holds one pool connection). */
  maxConcurrentCommits: number;
  /** Upper bound of events per commit. */
  maxEventsPerCommit: number;
  /** Requests waiting beyond this are refused with 503 (back-pressure). */
  maxQueuedEvents: number;
  onCommit?: (events: number, stored: number, ms: number) => void;
}

/** PostgreSQL errors worth retrying the whole transaction for. */
const RETRYABLE = new Set(["40001", "40P01"]);

export class Ingestor {
  private queue: Pending[] = [];
  private queuedEvents = 0;
  private inFlight = 0;
  private closed = false;
  private idle: (() => void)[] = [];

  constructor(
    private pool: pg.Pool,
    private options: IngestorOptions,
  ) {}

  /** Resolves once the events are committed (replays are acknowledged without being stored again). */
  ingest(workspaceId: string, events: NormalizedEvent[]): Promise<void> {
    if (this.closed) return Promise.reject(new ApiError("UNAVAILABLE", "The server is shutting down", undefined, { "retry-after": "1" }));
    if (this.queuedEvents + events.length > this.options.maxQueuedEvents) {
      return Promise.reject(new ApiError("UNAVAILABLE", "Ingestion is overloaded; retry later", undefined, { "retry-after": "1" }));
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ workspaceId, events, resolve, reject });
      this.queuedEvents += events.length;
      this.pump();
    });
  }

  /** Stops accepting and waits until every queued request is committed or failed. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.inFlight === 0 && this.queue.length === 0) return;
    await new Promise<void>((resolve) => this.idle.push(resolve));
  }

  private pump() {
    while (this.inFlight < this.options.maxConcurrentCommits && this.queue.length > 0) {
      const group: Pending[] = [];
      let count = 0;
      while (this.queue.length > 0) {
        const next = this.queue[0]!;
        if (group.length > 0 && count + next.events.length > this.options.maxEventsPerCommit) break;
        group.push(this.queue.shift()!);
        count += next.events.length;
      }
      this.queuedEvents -= count;
      this.inFlight++;
      void this.commitGroup(group).then((settle) => {
        this.inFlight--;
        // Send the next transaction before writing this group's responses, so PostgreSQL
        // works while we talk HTTP.
        this.pump();
        settle();
        if (this.inFlight === 0 && this.queue.length === 0) for (const done of this.idle.splice(0)) done();
      });
    }
  }

  /** Commits the group; returns what settles its requests (never rejects). */
  private async commitGroup(group: Pending[]): Promise<() => void> {
    try {
      await this.commit(group);
      return () => {
        for (const p of group) p.resolve();
      };
    } catch (err) {
      if (group.length === 1) return () => group[0]!.reject(err);
      // One request must not fail its neighbours: commit each on its own.
      for (const p of group) {
        try {
          await this.commit([p]);
          p.resolve();
        } catch (e) {
          p.reject(e);
        }
      }
      return () => {};
    }
  }

  /** One transaction for the whole group, retried on deadlock or serialization failure. */
  private async commit(group: Pending[]): Promise<void> {
    const started = performance.now();
    const rows: WorkspaceEvent[] = [];
    for (const p of group) for (const ev of p.events) rows.push({ workspaceId: p.workspaceId, ev });
    const oneStatement = fitsOneStatement(rows);
    for (let attempt = 1; ; attempt++) {
      try {
        const stored = await this.store(rows, oneStatement);
        this.options.onCommit?.(rows.length, stored, performance.now() - started);
        return;
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (attempt < 3 && code && RETRYABLE.has(code)) continue;
        throw err;
      }
    }
  }

  /** The fast path when the events fit it and it takes them, else the transactional path. */
  private async store(rows: WorkspaceEvent[], oneStatement: boolean): Promise<number> {
    if (oneStatement) {
      const stored = await storeInOneStatement(this.pool, rows);
      if (stored !== null) return stored;
    }
    return storeInTransaction(this.pool, rows);
  }
}
