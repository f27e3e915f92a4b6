// `tidings events send|import|list`: ingest one event, import a file of them, read them back.
import { realpathSync, statSync } from "node:fs";
import path from "node:path";
import { type EventType, singleEventBodies } from "@tidings/schema";
import type { TidingsEventInput } from "@tidings/sdk";
import { type Command, Option } from "commander";
import { action, type Ctx, positiveInt } from "../context.js";
import { CliError, UsageError, zodIssues } from "../errors.js";
import { parseJsonOption, readDataFile } from "../files.js";
import { fileIdentity, type ImportStats, importEvents } from "../import/importer.js";
import { type Format, formatOf, readRecords } from "../import/source.js";
import { bar, formatTime, Progress, truncate } from "../output.js";

const TYPES = ["identify", "track", "page", "screen", "group", "alias"] as const;

interface SendOptions {
  type?: EventType;
  userId?: string;
  anonymousId?: string;
  event?: string;
  name?: string;
  properties?: string;
  traits?: string;
  groupId?: string;
  previousId?: string;
  messageId?: string;
  timestamp?: string;
  data?: string;
  file?: string;
}

function eventFromOptions(opts: SendOptions): Record<string, unknown> {
  const base: Record<string, unknown> = opts.file
    ? (readDataFile(opts.file, "--file") as Record<string, unknown>)
    : opts.data
      ? parseJsonOption(opts.data, "--data")
      : {};
  if (!base || typeof base !== "object" || Array.isArray(base)) throw new UsageError("--file: expected one JSON object (an event)");
  const flags: Record<string, unknown> = {
    type: opts.type,
    userId: opts.userId,
    anonymousId: opts.anonymousId,
    event: opts.event,
    name: opts.name,
    groupId: opts.groupId,
    previousId: opts.previousId,
    messageId: opts.messageId,
    timestamp: opts.timestamp,
    properties: opts.properties === undefined ? undefined : parseJsonOption(opts.properties, "--properties"),
    traits: opts.traits === undefined ? undefined : parseJsonOption(opts.traits, "--traits"),
  };
  const event = { ...base };
  for (const [k, v] of Object.entries(flags)) if (v !== undefined) event[k] = v;
  return event;
}

interface ImportOptions {
  format?: Format;
  type?: EventType;
  importId?: string;
  concurrency: number;
  batchSize: number;
}

function importSummary(ctx: Ctx, file: string, stats: ImportStats, seconds: number, extra: Record<string, unknown>) {
  const rate = Math.round(stats.accepted / Math.max(seconds, 0.001));
  if (ctx.json) {
    ctx.out.data({
      file,
      records: stats.records,
      accepted: stats.accepted,
      rejected: stats.rejected.length,
      rejectedLines: stats.rejected,
      seconds: Number(seconds.toFixed(3)),
      eventsPerSecond: rate,
      ...extra,
    });
    return;
  }
  ctx.out.line(
    `Imported ${file}: ${stats.records} records, ${stats.accepted} accepted, ${stats.rejected.length} rejected (${seconds.toFixed(1)} s, ${rate} events/s)`,
  );
  const shown = stats.rejected.slice(0, 20);
  if (shown.length) {
    ctx.out.line("Rejected lines:");
    for (const r of shown) ctx.out.line(`  line ${r.line}: ${r.message}`);
    if (stats.rejected.length > shown.length) ctx.out.line(`  … and ${stats.rejected.length - shown.length} more (--json lists every one)`);
  }
}

export function registerEventCommands(program: Command) {
  const group = program.command("events").description("Send, import and list events (send and import use the write key)");

  group
    .command("send")
    .description("Send one event, from flags and/or a JSON object")
    .addOption(new Option("--type <type>", "event type (default: track, or the JSON's type)").choices(TYPES))
    .option("--user-id <id>", "userId")
    .option("--anonymous-id <id>", "anonymousId")
    .option("--event <name>", "track: the event name")
    .option("--name <name>", "page/screen: the name")
    .option("--properties <json>", "track/page/screen: properties, a JSON object")
    .option("--traits <json>", "identify/group: traits, a JSON object")
    .option("--group-id <id>", "group: the groupId")
    .option("--previous-id <id>", "alias: the previousId")
    .option("--message-id <id>", "messageId (a replay with the same id is stored once)")
    .option("--timestamp <iso>", "when it happened (ISO 8601)")
    .option("--data <json>", "the event as a JSON object (flags override its fields)")
    .option("--file <file>", "the event as a JSON/YAML file, - for stdin (flags override its fields)")
    .action(
      action(async (ctx, opts: SendOptions) => {
        const event = eventFromOptions(opts);
        const type = (event.type ?? "track") as EventType;
        if (!TYPES.includes(type)) throw new UsageError(`type: expected one of ${TYPES.join(", ")}, got ${JSON.stringify(type)}`);
        event.type = type;
        const checked = singleEventBodies[type].safeParse(event);
        if (!checked.success) throw new UsageError("the event is invalid; nothing was sent", zodIssues(checked.error));
        await ctx.api.sendEvent(event as TidingsEventInput);
        if (ctx.json) return ctx.out.data({ sent: true, event });
        ctx.out.line(
          `Sent ${type}${event.event ? ` "${event.event as string}"` : ""} for ${(event.userId ?? event.anonymousId) as string}`,
        );
      }),
    );

  group
    .command("import")
    .description("Import events from an NDJSON or CSV file, in batches; a re-run stores nothing twice")
    .argument("<file>", "file.ndjson (one event per line) or file.csv (header row; see --help)")
    .addOption(new Option("--format <format>", "file format (default: from the extension)").choices(["ndjson", "csv"]))
    .addOption(new Option("--type <type>", "type of events that have none").choices(TYPES))
    .option("--import-id <id>", "identity of the import for derived messageIds (default: the file's real path)")
    .addOption(new Option("--concurrency <n>", "requests in flight").argParser(positiveInt(16)).default(4))
    .addOption(new Option("--batch-size <n>", "events per request").argParser(positiveInt(500)).default(500))
    .addHelpText(
      "after",
      `
Each NDJSON line is one event (Segment spec: type, userId/anonymousId, event, traits,
properties, timestamp, …). A CSV file starts with a header row: columns named like event fields
(type, userId, event, timestamp, …) set them; traits, properties and context columns hold a JSON
object; dotted columns (traits.plan, properties.price) set one field (numbers, true, false and
null are typed, other cells are strings). Empty cells are left out.

A line without messageId gets one derived from the file's path (or --import-id), its line number
and its text, so running the same file again — after an interruption, say — stores nothing twice;
a line fixed in place after being rejected is imported on the next run. Keep the path (or pass the
same --import-id) between runs, and do not insert or remove lines before a re-run. Requests hold
at most 500 events and under 500 KB. Progress goes to stderr; the summary (accepted, rejected
lines with their line numbers) to stdout. Exit 1 when any line is rejected.`,
    )
    .action(
      action(async (ctx, file: string, opts: ImportOptions) => {
        const format = opts.format ?? formatOf(file);
        if (!format) throw new UsageError(`cannot tell the format of ${file}: name it .ndjson or .csv, or pass --format`);
        if (file === "-" && !opts.importId)
          throw new UsageError("importing standard input needs --import-id (the identity that makes re-runs safe)");
        let size = 0;
        let identity = opts.importId;
        if (file !== "-") {
          try {
            size = statSync(file).size;
            identity ??= realpathSync(file);
          } catch (err) {
            throw new UsageError(`${file}: ${(err as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (err as Error).message}`);
          }
        }
        // Fail on a missing write key before reading anything.
        if (!ctx.connection.writeKey)
          throw new UsageError("no write key: pass --write-key, set TIDINGS_WRITE_KEY or run `tidings login --write-key …`");

        const progress = new Progress();
        const started = performance.now();
        let read = 0;
        const draw = (stats: ImportStats, force = false) => {
          const secs = (performance.now() - started) / 1000;
          const pct = size ? Math.min(100, Math.floor((read / size) * 100)) : undefined;
          progress.update(
            `${path.basename(file)} ${pct === undefined ? "" : `${bar(read / size)} ${String(pct).padStart(3)}%  `}${stats.records} read · ${stats.accepted} accepted · ${stats.rejected.length} rejected · ${Math.round(stats.accepted / Math.max(secs, 0.001))} events/s`,
            force,
          );
        };
        const abort = new AbortController();
        const onSignal = () => abort.abort();
        process.once("SIGINT", onSignal);
        process.once("SIGTERM", onSignal);
        const result = await importEvents({
          api: ctx.api,
          records: readRecords(file, format, (chars) => (read += chars)),
          fileId: fileIdentity(identity!),
          defaultType: opts.type,
          concurrency: opts.concurrency,
          maxEvents: opts.batchSize,
          signal: abort.signal,
          onProgress: (s) => draw(s),
        }).finally(() => {
          process.off("SIGINT", onSignal);
          process.off("SIGTERM", onSignal);
        });
        draw(result, true);
        progress.done();
        const seconds = (performance.now() - started) / 1000;
        importSummary(ctx, file, result, seconds, { complete: !result.aborted && result.error === undefined });
        if (result.aborted || result.error !== undefined) {
          ctx.out.note("The import stopped before the end of the file; run the same command again to finish it (nothing is stored twice).");
          if (result.error !== undefined) throw result.error;
          process.exitCode = 130;
          return;
        }
        if (result.rejected.length) throw new CliError(`${result.rejected.length} line${result.rejected.length === 1 ? "" : "s"} rejected`);
      }),
    );

  group
    .command("list")
    .description("List stored events, newest first (admin API key)")
    .option("--user-id <id>", "only this user's events (any linked id)")
    .option("--event <name>", "only track events with this name")
    .addOption(new Option("--limit <n>", "page size").argParser(positiveInt(500)).default(50))
    .option("--cursor <cursor>", "continue from a previous page's nextCursor")
    .action(
      action(async (ctx, opts: { userId?: string; event?: string; limit: number; cursor?: string }) => {
        const page = await ctx.api.call("events.list", {
          query: { userId: opts.userId, event: opts.event, limit: opts.limit, cursor: opts.cursor },
        });
        if (ctx.json) return ctx.out.data(page);
        ctx.out.table(
          page.items,
          [
            { header: "TIME", value: (e) => formatTime(e.timestamp) },
            { header: "TYPE", value: (e) => e.type },
            { header: "USER", value: (e) => e.userId ?? e.anonymousId },
            { header: "EVENT", value: (e) => e.event },
            { header: "MESSAGE ID", value: (e) => e.messageId },
            {
              header: "PAYLOAD",
              value: (e) =>
                truncate(
                  (e.payload as { properties?: unknown; traits?: unknown }).properties ?? (e.payload as { traits?: unknown }).traits,
                  50,
                ),
            },
          ],
          "(no events)",
        );
        if (page.nextCursor) ctx.out.note(`more: --cursor ${page.nextCursor}`);
      }),
    );
}
