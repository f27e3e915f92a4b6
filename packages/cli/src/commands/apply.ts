// `tidings apply -f <file|dir>…`: upserts segments, templates, subscription groups and journeys
// kept in files (JSON or YAML, kind-tagged), validated before anything is sent.
import type { Command } from "commander";
import { type ApplyOutcome, applyDocuments } from "../apply/apply.js";
import { loadDocuments, type ResourceDocument } from "../apply/load.js";
import { action, type Ctx } from "../context.js";
import type { Column } from "../output.js";

interface ApplyOptions {
  file: string[];
  dryRun?: boolean;
}

const verbs = { created: "would create", updated: "would update", unchanged: "unchanged" } as const;

function print(ctx: Ctx, outcomes: ApplyOutcome[], dryRun: boolean) {
  if (ctx.json) {
    ctx.out.data({ dryRun, resources: outcomes });
    return;
  }
  const columns: Column<ApplyOutcome>[] = [
    { header: "KIND", value: (o) => o.kind },
    { header: "NAME", value: (o) => o.name },
    { header: "ID", value: (o) => o.id },
    { header: "RESULT", value: (o) => `${dryRun ? verbs[o.result] : o.result}${o.changes?.length ? ` (${o.changes.join(", ")})` : ""}` },
    { header: "FILE", value: (o) => o.source },
  ];
  ctx.out.table(outcomes, columns);
  const count = (r: ApplyOutcome["result"]) => outcomes.filter((o) => o.result === r).length;
  const summary = `${count("created")} ${dryRun ? "to create" : "created"}, ${count("updated")} ${dryRun ? "to update" : "updated"}, ${count("unchanged")} unchanged`;
  ctx.out.line(dryRun ? `${summary} (dry run: nothing was written)` : summary);
}

export function registerApplyCommand(program: Command) {
  program
    .command("apply")
    .description("Create or update segments, templates, subscription groups and journeys from JSON/YAML files")
    .requiredOption("-f, --file <path...>", "a file or a directory (walked recursively for .json, .yaml, .yml)")
    .option("--dry-run", "show what would be created or updated, without writing")
    .addHelpText(
      "after",
      `
Each document names its kind and holds the resource, as PUT /api/admin/… takes it:

  kind: Segment
  name: Pro users
  definition:
    entryNode: { type: Trait, id: plan, path: plan, operator: { type: Equals, value: pro } }

Kinds: SubscriptionGroup, Segment, Template, Journey (written in that order). A resource is
matched by its id when the document has one, else by name. Every document is validated before
anything is sent; a resource whose stored fields equal the document's is reported unchanged.`,
    )
    .action(
      action(async (ctx, opts: ApplyOptions) => {
        const docs = loadDocuments(opts.file);
        const dryRun = opts.dryRun === true;
        const outcomes: ApplyOutcome[] = [];
        const at: { doc?: ResourceDocument } = {};
        try {
          await applyDocuments(ctx.api, docs, { dryRun, onStart: (d) => (at.doc = d), onOutcome: (o) => outcomes.push(o) });
        } catch (err) {
          // Say what was written before the failure, then the failure itself.
          if (outcomes.length && !ctx.json) print(ctx, outcomes, dryRun);
          if (at.doc) ctx.out.note(`failed at ${at.doc.source} (${at.doc.kind.kind} "${at.doc.parsed.name as string}"):`);
          throw err;
        }
        print(ctx, outcomes, dryRun);
      }),
    );
}
