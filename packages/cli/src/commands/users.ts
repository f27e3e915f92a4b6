// `tidings users get|list|delete`: user profiles built from ingested events.
import type { UserSummary } from "@tidings/schema";
import { type Command, Option } from "commander";
import { action, isUuid, positiveInt } from "../context.js";
import { type Column, formatTime, truncate } from "../output.js";
import { kindByName, resolveResource } from "../resources.js";

const columns: Column<UserSummary>[] = [
  { header: "USER ID", value: (u) => u.userId },
  { header: "FIRST SEEN", value: (u) => formatTime(u.createdAt) },
  { header: "TRAITS", value: (u) => truncate(u.traits, 80) },
];

export function registerUserCommands(program: Command) {
  const group = program.command("users").description("Show, list and erase users");

  group
    .command("list")
    .description("List users by id")
    .option("--segment <id-or-name>", "only the current members of this segment, with when each entered it")
    .addOption(new Option("--limit <n>", "page size").argParser(positiveInt(500)).default(50))
    .option("--cursor <cursor>", "continue from a previous page's nextCursor")
    .action(
      action(async (ctx, opts: { segment?: string; limit: number; cursor?: string }) => {
        const segmentId =
          opts.segment === undefined || isUuid(opts.segment)
            ? opts.segment
            : (await resolveResource(ctx.api, kindByName.get("Segment")!, opts.segment)).id;
        const page = await ctx.api.call("users.list", { query: { segmentId, limit: opts.limit, cursor: opts.cursor } });
        if (ctx.json) return ctx.out.data(page);
        // A segment's members show when each entered it.
        const entered: Column<UserSummary> = { header: "ENTERED", value: (u) => formatTime(u.enteredAt) };
        ctx.out.table(page.items, segmentId === undefined ? columns : [columns[0]!, entered, ...columns.slice(1)], "(no users)");
        if (page.nextCursor) ctx.out.note(`more: --cursor ${page.nextCursor}`);
      }),
    );

  group
    .command("get")
    .description("Show a user: traits, identities, segments, journey runs and recent events")
    .argument("<user-id>", "the user's id (or a linked anonymousId)")
    .action(
      action(async (ctx, userId: string) => {
        const u = await ctx.api.call("users.get", { params: { userId } });
        if (ctx.json) return ctx.out.data(u);
        ctx.out.line(`User ${u.userId}`);
        ctx.out.line(`  first seen  ${formatTime(u.firstSeenAt)}`);
        ctx.out.line(`  last seen   ${formatTime(u.lastSeenAt)}`);
        if (u.identities.length) ctx.out.line(`  identities  ${u.identities.join(", ")}`);
        ctx.out.line("\nTraits");
        ctx.out.yaml(u.traits);
        ctx.out.line("\nSegments");
        ctx.out.table(u.segments, [
          { header: "NAME", value: (s) => s.name },
          { header: "ID", value: (s) => s.segmentId },
          { header: "ENTERED", value: (s) => formatTime(s.enteredAt) },
        ]);
        if (u.segmentChanges?.length) {
          ctx.out.line("\nSegment entries and exits");
          ctx.out.table(u.segmentChanges, [
            { header: "TIME", value: (c) => formatTime(c.at) },
            { header: "SEGMENT", value: (c) => c.name },
            { header: "CHANGE", value: (c) => (c.entered ? "entered" : "left") },
          ]);
        }
        if (u.journeyRuns?.length) {
          ctx.out.line("\nJourney runs");
          ctx.out.table(u.journeyRuns, [
            { header: "JOURNEY", value: (r) => r.journeyName },
            { header: "STATUS", value: (r) => r.status },
            { header: "NODE", value: (r) => r.nodeId },
            { header: "ENTERED", value: (r) => formatTime(r.enteredAt) },
          ]);
        }
        ctx.out.line("\nRecent events");
        ctx.out.table(u.recentEvents.slice(0, 10), [
          { header: "TIME", value: (e) => formatTime(e.timestamp) },
          { header: "TYPE", value: (e) => e.type },
          { header: "EVENT", value: (e) => e.event },
          { header: "MESSAGE ID", value: (e) => e.messageId },
        ]);
      }),
    );

  group
    .command("delete")
    .description("Erase a user: profile, events, memberships, and personal data of its deliveries and journey runs")
    .argument("<user-id>", "the user's id")
    .action(
      action(async (ctx, userId: string) => {
        await ctx.api.call("users.delete", { params: { userId } });
        if (ctx.json) return ctx.out.data({ deleted: true, userId });
        ctx.out.line(`Deleted user ${userId}`);
      }),
    );
}
