// `tidings deliveries tail` and `tidings events tail`: follow what happens, as `stripe listen` and
// Segment's debugger do, by polling the list endpoints (newest first) and printing what is new —
// deliveries once settled, with the message as rendered (what the `Log` provider records), events
// with their payload and any top-level field the event's type does not know (`trait` for `traits`).
import { type DeliveryRecord, didYouMean, type EventRecord, type EventType, schemaKeys, singleEventBodies } from "@tidings/schema";
import { isTidingsApiError } from "@tidings/sdk";
import { type Command, InvalidArgumentError, Option } from "commander";
import { stringify } from "yaml";
import { action, type Ctx, positiveInt } from "../context.js";
import { formatTime } from "../output.js";
import { DeliveryNames } from "../delivery-sources.js";

interface TailOptions {
  interval: number;
  count?: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A failure that a restarting server gives (refused, reset, timed out, 5xx): following waits it out. */
const passing = (err: unknown) =>
  isTidingsApiError(err) && ((err.status === 0 && (err.code === "NETWORK" || err.code === "TIMEOUT")) || err.status >= 500);

/**
 * Polls `poll` until `count` items were printed (or forever); Ctrl-C stops it. `poll` prints at
 * most `remaining` items and answers how many it printed. When the server goes away (a restart),
 * says so once, polls on every few seconds, and says when it is back.
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
  let lost = false;
  try {
    while (!stop) {
      try {
        printed += await poll(opts.count === undefined ? Number.POSITIVE_INFINITY : opts.count - printed);
        if (lost) ctx.out.note("reconnected; following again (nothing was missed)");
        lost = false;
      } catch (err) {
        if (!passing(err)) throw err;
        if (!lost) ctx.out.note(`lost the server (${(err as Error).message}); reconnecting… (Ctrl-C to stop)`);
        lost = true;
      }
      if (opts.count !== undefined && printed >= opts.count) return;
      await sleep(lost ? Math.max(opts.interval, 2000) : opts.interval);
    }
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

/** `--since`: a duration back from now (`30s`, `10m`, `2h`, `1d`), an ISO 8601 time, or ms since the epoch. */
export function parseSince(value: string): number {
  const span = /^(\d+)(s|m|h|d)$/.exec(value.trim());
  if (span) return Date.now() - Number(span[1]) * { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[span[2] as "s" | "m" | "h" | "d"];
  const at = /^\d+$/.test(value.trim()) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(at))
    throw new InvalidArgumentError("expected a duration (30s, 10m, 2h, 1d), an ISO 8601 time or ms since the epoch");
  return at;
}

const indented = (value: unknown) =>
  stringify(value, { lineWidth: 0 })
    .trimEnd()
    .split("\n")
    .map((l) => `    ${l}`)
    .join("\n");

const SETTLED = new Set(["Sent", "Failed", "Skipped"]);

function printDelivery(ctx: Ctx, d: DeliveryRecord, names: DeliveryNames): void {
  if (ctx.json) {
    ctx.out.line(JSON.stringify(d));
    return;
  }
  const template = names.template(d);
  ctx.out.line(
    `${formatTime(d.updatedAt)}  ${d.status.padEnd(7)}  ${d.channel}  user ${d.userId}${d.contact ? ` → ${d.contact}` : ""}  ${names.source(d)}${template ? `  template ${template}` : ""}`,
  );
  if (d.reason) ctx.out.line(`    reason: ${d.reason}`);
  if (d.rendered) ctx.out.line(indented(d.rendered));
}

interface DeliveryTailOptions extends TailOptions {
  since?: number;
}

/** Where following starts: the deliveries settled by then are not printed; those still pending are, once they settle. */
async function startingPoint(ctx: Ctx, since: number | undefined) {
  if (since !== undefined) return { since, seen: new Set<string>(), pending: new Map<string, number>() };
  // What exists already is not new: the newest delivery's time is where following starts.
  const first = await ctx.api.call("deliveries.list", { query: { include: "content", limit: 500 } });
  return {
    since: first.items[0]?.createdAt,
    seen: new Set(first.items.filter((d) => SETTLED.has(d.status)).map((d) => d.id)),
    pending: new Map<string, number>(first.items.filter((d) => !SETTLED.has(d.status)).map((d) => [d.id, d.createdAt])),
  };
}

export function registerDeliveryTail(group: Command): void {
  group
    .command("tail")
    .description(
      "Follow deliveries created after it starts (or since --since) as they settle, with the message as rendered (no provider needed: Log records it)",
    )
    .addOption(new Option("--interval <ms>", "between polls").argParser(positiveInt(60_000)).default(1000))
    .addOption(new Option("--count <n>", "stop after this many deliveries").argParser(positiveInt()))
    .addOption(
      new Option("--since <when>", "also show deliveries created since then: 10m, 2h, 1d, or an ISO 8601 time").argParser(parseSince),
    )
    .addHelpText(
      "after",
      `
Prints each delivery created after the command started (with --since, after that time) once it
is Sent, Failed or Skipped: time, status, channel, user, contact point, source (broadcast, or
journey and node, by name), template, the reason of a failure or skip, and the rendered message
(subject, text, body, url, …). When the server goes away (a restart), it says so and reconnects
by itself. --json prints one delivery per line (NDJSON).`,
    )
    .action(
      action(async (ctx, opts: DeliveryTailOptions) => {
        const start = await startingPoint(ctx, opts.since);
        let since = start.since;
        const { seen, pending } = start;
        const names = new DeliveryNames(ctx.api);
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
          if (!ctx.json) await names.learn(items.filter((d) => SETTLED.has(d.status) && !seen.has(d.id)));
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
            printDelivery(ctx, d, names);
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
