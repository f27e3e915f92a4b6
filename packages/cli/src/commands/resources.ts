// `tidings segments|templates|subscription-groups|journeys list|get|delete`: the same three
// commands over each kind of stored definition (journeys add start|pause in journeys.ts).
import { type Command, Option } from "commander";
import { action, positiveInt } from "../context.js";
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
    .description(`Show a ${kind.noun} (YAML that \`tidings apply\` takes back; --json for JSON)`)
    .argument("<id-or-name>", `the ${kind.noun}'s id or name`)
    .action(
      action(async (ctx, ref: string) => {
        const resource = await resolveResource(ctx.api, kind, ref);
        if (ctx.json) return ctx.out.data(resource);
        ctx.out.yaml({ kind: kind.kind, ...resource });
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

  return group;
}
