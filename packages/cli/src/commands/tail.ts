// `tidings deliveries tail` and `tidings events tail`: follow what happens, as `stripe listen` and
// Segment's debugger do, by polling the list endpoints (newest first) and printing what is new —
// deliveries once settled, with the message as rendered (what the `Log` provider records), events
// with their payload and any top-level field the event's type does not know (`trait` for `traits`).
import { type DeliveryRecord, didYouMean, type EventRecord, type EventType, schemaKeys, singleEventBodies } from "@tidings/schema";
import { type Command, Option } from "commander";
import { stringify } from "yaml";
import { action, type Ctx, positiveInt } from "../context.js";
import { formatTime } from "../output.js";
import { deliverySource } from "./deliveries.js";

interface TailOptions {
  interval: number;
  count?: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls `poll` until `count` items were printed (or forever); Ctrl-C stops it. `poll` prints at
 * most `remaining` items and answers how many it printed.
 */
async function follow(ctx: Ctx, opts: TailOptions, what: string, poll: (remaining: number) => Promise<number>): Promise<void> {
  let stop = false;
  const onSignal = () => {
    stop = true;
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  ctx.out.note(`Waiting for ${what}… (Ctrl-C to stop)`);
  let printed = 0;
  try {
    while (!stop) {
      printed += await poll(opts.count === undefined ? Number.POSITIVE_INFINITY : opts.count - printed);
      if (opts.count !== undefined && printed >= opts.count) return;
      await sleep(opts.interval);
    }
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

const indented = (value: unknown) =>
  stringify(value, { lineWidth: 0 })
    .trimEnd()
    .split("\n")
    .map((l) => `    ${l}`)
    .join("\n");

const SETTLED = new Set(["Sent", "Failed", "Skipped"]);

function printDelivery(ctx: Ctx, d: DeliveryRecord): void {
  if (ctx.json) {
    ctx.out.line(JSON.stringify(d));
    return;
  }
  ctx.out.line(
    `${formatTime(d.updatedAt)}  ${d.status.padEnd(7)}  ${d.channel}  user ${d.userId}${d.contact ? ` → ${d.contact}` : ""}  ${deliverySource(d)}`,
  );
  if (d.reason) ctx.out.line(`    reason: ${d.reason}`);
  if (d.rendered) ctx.out.line(indented(d.rendered));
}

export function registerDeliveryTail(group: Command): void {
  group
    .command("tail")
    .description("Follow new deliveries as they settle, with the message as rendered (no provider needed: Log records it)")
    .addOption(new Option("--interval <ms>", "between polls").argParser(positiveInt(60_000)).default(1000))
    .addOption(new Option("--count <n>", "stop after this many deliveries").argParser(positiveInt()))
    .addHelpText(
      "after",
      `
Prints each delivery created after the command started once it is Sent, Failed or Skipped: time,
status, channel, user, contact point, source, the reason of a failure or skip, and the rendered
message (subject, text, body, url, …). --json prints one delivery per line (NDJSON).`,
    )
    .action(
      action(async (ctx, opts: TailOptions) => {
        // What exists already is not new: the newest delivery's time is where following starts.
        const first = await ctx.api.call("deliveries.list", { query: { include: "content", limit: 500 } });
        const seen = new Set(first.items.filter((d) => SETTLED.has(d.status)).map((d) => d.id));
        let since = first.items[0]?.createdAt;
        const pending = new Map<string, number>(first.items.filter((d) => !SETTLED.has(d.status)).map((d) => [d.id, d.createdAt]));
        await follow(ctx, opts, "deliveries", async (remaining) => {
          // From the oldest delivery still pending (it may settle), else the newest one seen.
          const from = Math.min(since ?? Number.POSITIVE_INFINITY, ...pending.values());
          const items: DeliveryRecord[] = [];
          let cursor: string | undefined;
          do {
            const page = await ctx.api.call("deliveries.list", {
              query: { include: "content", limit: 500, cursor, ...(Number.isFinite(from) ? { since: from } : {}) },
            });
            items.push(...page.items);
            cursor = page.nextCursor ?? undefined;
          } while (cursor);
          let printed = 0;
          for (const d of items.reverse()) {
            if (printed >= remaining) break;
            since = Math.max(since ?? 0, d.createdAt);
            if (seen.has(d.id)) continue;
            if (!SETTLED.has(d.status)) {
              pending.set(d.id, d.createdAt);
              continue;
            }
            pending.delete(d.id);
            seen.add(d.id);
            printDelivery(ctx, d);
            printed++;
          }
          return printed;
        });
      }),
    );
}

/** Fields a Segment library may send beside the spec's (kept, never used). */
const LIBRARY_FIELDS = ["_metadata", "receivedAt", "version", "channel", "writeKey", "type"];

/** The payload's top-level fields the event's type does not know, each with the closest known one. */
export function unknownFields(e: EventRecord): string[] {
  const schema = singleEventBodies[e.type as EventType];
  if (!schema) return [];
  const known = new Set([...schemaKeys(schema), ...LIBRARY_FIELDS]);
  return Object.keys(e.payload)
    .filter((k) => !known.has(k))
    .map((k) => `${JSON.stringify(k)}${didYouMean(k, known)}`);
}

function printEvent(ctx: Ctx, e: EventRecord): void {
  const unknown = unknownFields(e);
  if (ctx.json) {
    ctx.out.line(JSON.stringify({ ...e, unknownFields: unknown }));
    return;
  }
  const who = e.userId ?? `anonymous ${e.anonymousId}`;
  ctx.out.line(`${formatTime(e.receivedAt)}  ${e.type.padEnd(8)}  ${who}${e.event ? `  "${e.event}"` : ""}  ${e.messageId}`);
  for (const field of unknown) ctx.out.line(`    ! unknown field ${field}: stored, but nothing reads it`);
  const { context: _context, ...shown } = e.payload as Record<string, unknown>;
  ctx.out.line(indented(shown));
}

/** How far back each poll looks again, for events received just before the newest seen but committed after it. */
const EVENT_LOOKBACK_MS = 5_000;

export function registerEventTail(group: Command): void {
  group
    .command("tail")
    .description("A live event debugger: follow events as they arrive, with their payload and any unknown field")
    .addOption(new Option("--interval <ms>", "between polls").argParser(positiveInt(60_000)).default(1000))
    .addOption(new Option("--count <n>", "stop after this many events").argParser(positiveInt()))
    .option("--user-id <id>", "only this user's events")
    .addHelpText(
      "after",
      `
Prints each event received after the command started, in the order the server received them
(an imported event with an old timestamp shows too): time received, type, user, name, messageId,
the payload as stored (without context), and a line for each top-level field its type does not
know ("trait" (did you mean "traits"?)): the server keeps such fields but nothing reads them.
--json prints one event per line (NDJSON) with its unknownFields.`,
    )
    .action(
      action(async (ctx, opts: TailOptions & { userId?: string }) => {
        /** Every event received at or after `since`, oldest first. */
        const receivedSince = async (since: number | undefined, limit = 500) => {
          const items: EventRecord[] = [];
          let cursor: string | undefined;
          do {
            const page = await ctx.api.call("events.list", {
              query: {
                order: "received",
                limit,
                cursor,
                ...(since !== undefined ? { receivedSince: since } : {}),
                ...(opts.userId ? { userId: opts.userId } : {}),
              },
            });
            items.push(...page.items);
            cursor = page.nextCursor ?? undefined;
          } while (cursor && since !== undefined);
          return items.reverse();
        };
        // What exists already is not new: following starts at the newest event received. Events
        // received in the last few seconds before it are remembered, as each poll looks back that far.
        let newest = (await receivedSince(undefined, 1))[0]?.receivedAt;
        const seen = new Map<string, number>();
        if (newest !== undefined) for (const e of await receivedSince(newest - EVENT_LOOKBACK_MS)) seen.set(e.messageId, e.receivedAt);
        await follow(ctx, opts, "events", async (remaining) => {
          const from = newest === undefined ? undefined : newest - EVENT_LOOKBACK_MS;
          let printed = 0;
          for (const e of await receivedSince(from ?? 0)) {
            if (printed >= remaining) break;
            newest = Math.max(newest ?? 0, e.receivedAt);
            if (seen.has(e.messageId)) continue;
            seen.set(e.messageId, e.receivedAt);
            printEvent(ctx, e);
            printed++;
          }
          for (const [id, at] of seen) if (newest !== undefined && at < newest - EVENT_LOOKBACK_MS) seen.delete(id);
          return printed;
        });
      }),
    );
}
