// `tidings segments|templates|subscription-groups|journeys list|get|delete`: the same three
// commands over each kind of stored definition (journeys add start|pause in journeys.ts, segments
// add members).
import type { SegmentUser } from "@tidings/schema";
import { type Command, Option } from "commander";
import { action, isUuid, positiveInt } from "../context.js";
import { formatTime } from "../output.js";
import { storedOf } from "../apply/apply.js";
import { referredKinds, withNames } from "../apply/references.js";
import { deleteResource, listAll, listPage, type ResourceKind, resolveResource } from "../resources.js";

export function registerResourceCommands(program: Command, kind: ResourceKind): Command {
  const group = program
    .command(kind.command)
    .description(`List, show and delete ${kind.noun}s (create and update them with \`tidings apply\`)`);

  group
    .command("list")
    .description(`List ${kind.noun}s by name`)
    .addOption(new Option("--limit <n>", "page size").argParser(positiveInt(500)).default(100))
    .option("--cursor <cursor>", "continue from a previous page's nextCursor")
    .option("--all", "every page")
    .action(
      action(async (ctx, opts: { limit: number; cursor?: string; all?: boolean }) => {
        const page = opts.all
          ? { items: await listAll(ctx.api, kind), nextCursor: null }
          : await listPage(ctx.api, kind, opts.limit, opts.cursor);
        if (ctx.json) return ctx.out.data(page);
        ctx.out.table(page.items, kind.columns, `(no ${kind.noun}s)`);
        if (page.nextCursor) ctx.out.note(`more: --cursor ${page.nextCursor} (or --all)`);
      }),
    );

  group
    .command("get")
    .description(
      `Show a ${kind.noun} as YAML that \`tidings apply\` takes back, referring to other resources by name ({name: …}); --json for the API's JSON (ids)`,
    )
    .argument("<id-or-name>", `the ${kind.noun}'s id or name`)
    .option("--ids", "write references as ids, not {name: …}")
    .action(
      action(async (ctx, ref: string, opts: { ids?: boolean }) => {
        const resource = await resolveResource(ctx.api, kind, ref);
        if (ctx.json) return ctx.out.data(resource);
        const shown = opts.ids ? resource : withNames(resource, await storedOf(ctx.api, referredKinds(resource)));
        ctx.out.yaml({ kind: kind.kind, ...shown });
      }),
    );

  group
    .command("delete")
    .description(`Delete a ${kind.noun}`)
    .argument("<id-or-name>", `the ${kind.noun}'s id or name`)
    .action(
      action(async (ctx, ref: string) => {
        const resource = await resolveResource(ctx.api, kind, ref);
        await deleteResource(ctx.api, kind, resource.id);
        if (ctx.json) return ctx.out.data({ deleted: true, kind: kind.kind, id: resource.id, name: resource.name });
        ctx.out.line(`Deleted ${kind.noun} "${resource.name}" (${resource.id})`);
      }),
    );

  if (kind.kind === "Segment") registerSegmentMembers(group, kind);
  return group;
}

/** `tidings segments members NAME`: the segment's current members and when each entered it. */
function registerSegmentMembers(group: Command, kind: ResourceKind) {
  group
    .command("members")
    .description("List a segment's current members, ordered by user id, with when each entered it")
    .argument("<id-or-name>", "the segment's id or name")
    .addOption(new Option("--limit <n>", "page size").argParser(positiveInt(500)).default(100))
    .option("--search <text>", "only members whose user id contains this text (case-insensitive)")
    .option("--cursor <cursor>", "continue from a previous page's nextCursor")
    .option("--all", "every page")
    .action(
      action(async (ctx, ref: string, opts: { limit: number; search?: string; cursor?: string; all?: boolean }) => {
        const segment = isUuid(ref) ? { id: ref } : await resolveResource(ctx.api, kind, ref);
        const users: SegmentUser[] = [];
        let cursor = opts.cursor;
        let next: string | null;
        do {
          const page = await ctx.api.call("segments.users.list", {
            params: { id: segment.id },
            query: { limit: opts.limit, cursor, search: opts.search },
          });
          users.push(...page.items);
          next = page.nextCursor;
          cursor = next ?? undefined;
        } while (opts.all && next);
        if (ctx.json) return ctx.out.data({ items: users, nextCursor: next });
        ctx.out.table(
          users,
          [
            { header: "USER ID", value: (u) => u.userId },
            { header: "ENTERED", value: (u) => formatTime(u.enteredAt) },
          ],
          "(no members)",
        );
        if (next) ctx.out.note(`more: --cursor ${next} (or --all)`);
      }),
    );
}
