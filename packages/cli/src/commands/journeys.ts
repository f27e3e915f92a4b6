// `tidings journeys list|get|delete|start|pause|stats|runs`: start and pause PUT the journey with
// its new status; stats and runs show what its runs (one per user on its way through) are doing.
import { type JourneyNodeStats, type JourneyRun, JourneyRunStatus, type JourneyStats } from "@tidings/schema";
import { type Command, Option } from "commander";
import { action, positiveInt } from "../context.js";
import { type Column, formatTime } from "../output.js";
import { kindByName, resolveResource, upsertResource } from "../resources.js";
import { registerResourceCommands } from "./resources.js";

const journeys = kindByName.get("Journey")!;

type RunCounts = Pick<JourneyStats, "entered" | "active" | "completed" | "converted">;
const countColumns = <T extends RunCounts>(): Column<T>[] => [
  { header: "ENTERED", value: (c) => c.entered, right: true },
  { header: "ACTIVE", value: (c) => c.active, right: true },
  { header: "COMPLETED", value: (c) => c.completed, right: true },
  { header: "CONVERTED", value: (c) => c.converted, right: true },
];

/** Delivery counts exist only for message nodes: blank for the others rather than a misleading 0. */
const optional = (v: number | undefined) => v ?? "";
const nodeColumns: Column<JourneyNodeStats>[] = [
  { header: "NODE", value: (n) => n.id },
  { header: "TYPE", value: (n) => n.type },
  { header: "WAITING", value: (n) => n.waiting, right: true },
  { header: "REACHED", value: (n) => n.reached, right: true },
  { header: "SENT", value: (n) => optional(n.sent), right: true },
  { header: "SKIPPED", value: (n) => optional(n.skipped), right: true },
  { header: "FAILED", value: (n) => optional(n.failed), right: true },
  { header: "QUEUED", value: (n) => optional(n.queued), right: true },
  { header: "DEFERRED", value: (n) => optional(n.deferred), right: true },
];

const runColumns: Column<JourneyRun>[] = [
  { header: "ID", value: (r) => r.id },
  { header: "USER", value: (r) => r.userId },
  { header: "VERSION", value: (r) => r.version, right: true },
  { header: "STATUS", value: (r) => r.status },
  { header: "NODE", value: (r) => r.nodeId },
  { header: "WAITING UNTIL", value: (r) => formatTime(r.waitingUntil) },
  { header: "ENTERED", value: (r) => formatTime(r.enteredAt) },
];

interface RunsOptions {
  user?: string;
  status?: JourneyRunStatus;
  limit: number;
  cursor?: string;
  all?: boolean;
}

export function registerJourneyCommands(program: Command) {
  const group = registerResourceCommands(program, journeys).description(
    "List, show, delete, start and pause journeys, and follow their runs (create and update them with `tidings apply`)",
  );
  const transition = (name: string, status: "Running" | "Paused", description: string) =>
    group
      .command(name)
      .description(description)
      .argument("<id-or-name>", "the journey's id or name")
      .action(
        action(async (ctx, ref: string) => {
          const journey = await resolveResource(ctx.api, journeys, ref);
          const before = journey.status;
          const saved = await upsertResource(ctx.api, journeys, { id: journey.id, name: journey.name, status });
          if (ctx.json) return ctx.out.data(saved);
          ctx.out.line(
            before === saved.status
              ? `Journey "${saved.name}" was already ${saved.status}`
              : `Journey "${saved.name}": ${before} → ${saved.status}`,
          );
        }),
      );
  transition("start", "Running", "Start a journey (status Running): users entering its segment or sending its event start runs");
  transition("pause", "Paused", "Pause a running journey (status Paused): no new runs, runs in progress wait");

  group
    .command("stats")
    .description(
      "Show a journey's run counts (entered, active, completed, converted), then per node the runs waiting there, the runs that reached it and its messages sent, skipped, failed, queued and deferred (--json: the stats object)",
    )
    .argument("<id-or-name>", "the journey's id or name")
    // Not `--version`: commander reads the program's options anywhere, and that one prints the CLI's version.
    .addOption(
      new Option("--definition-version <n>", "only the runs of this definition version, with its nodes (default: every version)").argParser(
        positiveInt(),
      ),
    )
    .action(
      action(async (ctx, ref: string, opts: { definitionVersion?: number }) => {
        const journey = await resolveResource(ctx.api, journeys, ref);
        const stats = await ctx.api.call("journeys.stats", { params: { id: journey.id }, query: { version: opts.definitionVersion } });
        if (ctx.json) return ctx.out.data(stats);
        const which = stats.version === null ? "all versions" : `version ${stats.version}`;
        ctx.out.line(`Journey "${journey.name}" (${journey.id}), ${which}`);
        ctx.out.table([stats], countColumns<JourneyStats>());
        ctx.out.line();
        ctx.out.table(stats.nodes, nodeColumns, "(no nodes: the journey has no definition)");
        // Per-version counts add something only when runs are on more than one version.
        if (stats.version === null && stats.versions.length > 1) {
          ctx.out.line();
          ctx.out.table(stats.versions, [
            { header: "VERSION", value: (v) => v.version, right: true },
            ...countColumns<(typeof stats.versions)[number]>(),
          ]);
        }
      }),
    );

  group
    .command("runs")
    .description("List a journey's runs, newest first: each user's way through it, the node it is at and until when it waits there")
    .argument("<id-or-name>", "the journey's id or name")
    .option("--user <user-id>", "only this user's runs")
    .addOption(new Option("--status <status>", "only runs in this status").choices(JourneyRunStatus.options))
    .addOption(new Option("--limit <n>", "page size").argParser(positiveInt(500)).default(50))
    .option("--cursor <cursor>", "continue from a previous page's nextCursor")
    .option("--all", "every page")
    .action(
      action(async (ctx, ref: string, opts: RunsOptions) => {
        const journey = await resolveResource(ctx.api, journeys, ref);
        const filters = { userId: opts.user, status: opts.status };
        let page: { items: JourneyRun[]; runs: JourneyRun[]; nextCursor: string | null };
        if (opts.all) {
          const items: JourneyRun[] = [];
          let cursor = opts.cursor;
          do {
            const next = await ctx.api.call("journeys.runs.list", {
              params: { id: journey.id },
              query: { ...filters, limit: 500, cursor },
            });
            items.push(...next.items);
            cursor = next.nextCursor ?? undefined;
          } while (cursor);
          page = { items, runs: items, nextCursor: null };
        } else {
          page = await ctx.api.call("journeys.runs.list", {
            params: { id: journey.id },
            query: { ...filters, limit: opts.limit, cursor: opts.cursor },
          });
        }
        if (ctx.json) return ctx.out.data(page);
        ctx.out.table(page.items, runColumns, "(no runs)");
        if (page.nextCursor) ctx.out.note(`more: --cursor ${page.nextCursor} (or --all)`);
      }),
    );
}
