// LISTEN on PostgreSQL channels over one dedicated connection, reconnecting with back-off.
// Notifications sent while the connection is down are lost (PostgreSQL keeps none for absent
// listeners): handlers are for low-latency wake-ups, with a recurring job as the safety net, and
// each channel's `resumed` callbacks run once the connection is back, to look for what was missed.
import pg from "pg";
import type { JobLog } from "./log.ts";
import { errorText } from "../lib/errors.ts";
import { backoffMs } from "../lib/time.ts";

export type NotificationHandler = (payload: string) => void | Promise<void>;

/** Reconnection back-off: 100 ms doubling, at most this (a refused connection costs nothing, and
 * every moment without LISTEN is a moment of wake-ups left to the recurring safety net). */
const MAX_BACKOFF_MS = 1_000;

export interface ChannelHandlers {
  notified: NotificationHandler[];
  /** Called after a reconnection (notifications sent while the connection was down are lost). */
  resumed: (() => void | Promise<void>)[];
}

export class Listener {
  private client: pg.Client | null = null;
  private closed = false;
  private failures = 0;
  private retry: NodeJS.Timeout | null = null;

  constructor(
    private readonly connectionString: string,
    private readonly handlers: ReadonlyMap<string, ChannelHandlers>,
    private readonly log: JobLog,
  ) {}

  /** Connects and listens; rejects if the first connection fails. */
  async start(): Promise<void> {
    await this.connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => {});
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.connectionString, application_name: "tidings-listen" });
    client.on("error", (err) => this.lost(client, err));
    client.on("end", () => this.lost(client, new Error("connection closed")));
    client.on("notification", (msg) => this.dispatch(msg.channel, msg.payload ?? ""));
    this.client = client;
    try {
      await client.connect();
      for (const channel of this.handlers.keys()) await client.query(`LISTEN ${client.escapeIdentifier(channel)}`);
    } catch (err) {
      if (this.client === client) this.client = null;
      await client.end().catch(() => {});
      throw err;
    }
    if (this.closed) {
      await client.end().catch(() => {});
      return;
    }
    const reconnected = this.failures > 0;
    this.failures = 0;
    if (reconnected) {
      for (const [channel, { resumed }] of this.handlers) for (const fn of resumed) this.run(channel, fn);
    }
  }

  private dispatch(channel: string, payload: string) {
    for (const handler of this.handlers.get(channel)?.notified ?? []) this.run(channel, () => handler(payload));
  }

  private run(channel: string, fn: () => void | Promise<void>) {
    Promise.resolve()
      .then(fn)
      .catch((err) => this.log("error", `handler of channel ${channel} failed: ${errorText(err)}`));
  }

  private lost(client: pg.Client, err: Error) {
    if (this.closed || this.client !== client) return;
    this.client = null;
    client.end().catch(() => {});
    this.log("warn", `LISTEN connection lost (${err.message}); reconnecting`);
    this.reconnectLater();
  }

  private reconnectLater() {
    // One reconnection at a time: a connection lost during connect() reports it twice (its
    // 'error' event and connect()'s rejection), which would start a second, orphaned client.
    if (this.retry || this.closed) return;
    const delay = backoffMs(this.failures++, 100, MAX_BACKOFF_MS);
    this.retry = setTimeout(() => {
      this.retry = null;
      if (this.closed) return;
      this.connect().catch((err) => {
        this.log("warn", `LISTEN reconnection failed (${errorText(err)}); retrying in a moment`);
        this.reconnectLater();
      });
    }, delay);
    this.retry.unref();
  }
}
