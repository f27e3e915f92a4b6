// `tidings templates render`: a stored template rendered for a user, as a send would render it,
// with the variables that resolved to nothing named (they render as an empty string).
import type { UnresolvedVariable } from "@tidings/schema";
import type { Command } from "commander";
import { action } from "../context.js";
import { parseJsonOption } from "../files.js";
import { resolveResource, type ResourceKind } from "../resources.js";

/** A note per variable that resolved to nothing; `user.userId` and the like point at `user.id`. */
export function unresolvedNotes(unresolved: readonly UnresolvedVariable[]): string[] {
  return unresolved.map(({ path, variable }) => {
    const hint = /^user\.(userId|user_id|userid)$/.test(variable) ? " (the user's id is user.id)" : "";
    return `warning: {{ ${variable} }} in ${path} resolved to nothing and rendered empty${hint}`;
  });
}

export function registerTemplateCommands(group: Command, kind: ResourceKind): void {
  group
    .command("render")
    .description("Render a template for a user without sending it; warns about variables that resolved to nothing")
    .argument("<id-or-name>", "the template's id or name")
    .requiredOption("--user-id <id>", "a known user (its traits fill `user`)")
    .option("--event <json>", "an event exposed as `event` (as for a journey started by that event), a JSON object")
    .option("--draft", "render the template's draft instead of its definition")
    .addHelpText(
      "after",
      `
The Liquid scope: user.<trait> and user.id, event (the triggering event), workspace.id,
workspace.name and unsubscribe_url. Variables that resolved to nothing are listed on stderr
(and under "unresolved" with --json).`,
    )
    .action(
      action(async (ctx, ref: string, opts: { userId: string; event?: string; draft?: boolean }) => {
        const template = await resolveResource(ctx.api, kind, ref);
        const result = await ctx.api.call("templates.render", {
          body: {
            templateId: template.id,
            source: opts.draft ? "draft" : "definition",
            userId: opts.userId,
            ...(opts.event === undefined ? {} : { event: parseJsonOption(opts.event, "--event") }),
          },
        });
        if (ctx.json) return ctx.out.data(result);
        ctx.out.yaml(result.rendered);
        for (const note of unresolvedNotes(result.unresolved ?? [])) ctx.out.note(note);
      }),
    );
}
