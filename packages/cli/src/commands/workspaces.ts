// `tidings workspaces create|list`: workspaces, with the server's root key.
import type { WorkspaceResource } from "@tidings/schema";
import { type Command, Option } from "commander";
import { configPath, saveProfile } from "../config.js";
import { action, positiveInt } from "../context.js";
import { type Column, formatTime } from "../output.js";

const rootKeyOption = () => new Option("--root-key <key>", "the server's root key").env("TIDINGS_ROOT_KEY");

const columns: Column<WorkspaceResource>[] = [
  { header: "NAME", value: (w) => w.name },
  { header: "ID", value: (w) => w.id },
  { header: "CREATED", value: (w) => formatTime(w.createdAt) },
];

export function registerWorkspaceCommands(program: Command) {
  const group = program.command("workspaces").description("Create and list workspaces (needs the root key)");

  group
    .command("create")
    .description("Create a workspace; prints its write key and admin API key (shown once)")
    .argument("<name>", "unique workspace name")
    .addOption(rootKeyOption())
    .option("--save-profile <profile>", "save the new workspace's host and keys as this profile")
    .action(
      action(async (ctx, name: string, opts: { saveProfile?: string }) => {
        const created = await ctx.api.call("workspaces.create", { body: { name } });
        if (opts.saveProfile) {
          saveProfile(opts.saveProfile, {
            host: ctx.connection.host,
            apiKey: created.adminApiKey,
            workspaceId: created.workspace.id,
            writeKey: created.writeKey,
          });
        }
        if (ctx.json) return ctx.out.data(created);
        ctx.out.line(`Created workspace "${created.workspace.name}" (${created.workspace.id}). These keys are shown once:`);
        ctx.out.line(`  write key:     ${created.writeKey}`);
        ctx.out.line(`  admin API key: ${created.adminApiKey}`);
        if (opts.saveProfile) ctx.out.line(`Saved as profile "${opts.saveProfile}" in ${configPath()}`);
      }),
    );

  group
    .command("list")
    .description("List workspaces by name")
    .addOption(rootKeyOption())
    .addOption(new Option("--limit <n>", "page size").argParser(positiveInt(500)).default(100))
    .option("--cursor <cursor>", "continue from a previous page's nextCursor")
    .action(
      action(async (ctx, opts: { limit: number; cursor?: string }) => {
        const page = await ctx.api.call("workspaces.list", { query: { limit: opts.limit, cursor: opts.cursor } });
        if (ctx.json) return ctx.out.data(page);
        ctx.out.table(page.items, columns, "(no workspaces)");
        if (page.nextCursor) ctx.out.note(`more: --cursor ${page.nextCursor}`);
      }),
    );
}
