// `tidings apply -f <file|dir>…`: upserts segments, templates, subscription groups and journeys
// kept in files (JSON or YAML, kind-tagged), validated before anything is sent.
import type { Command } from "commander";
import { type ApplyOutcome, applyDocuments, storedOf } from "../apply/apply.js";
import { isTidingsApiError } from "@tidings/sdk";
import { loadDocuments } from "../apply/load.js";
import { action, type Ctx, reportError } from "../context.js";
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
  for (const o of outcomes) {
    for (const w of o.warnings ?? []) ctx.out.note(`warning: ${o.kind} "${o.name}" (${o.source}) ${w.path}: ${w.message}`);
  }
}

export function registerApplyCommand(program: Command) {
  program
    .command("apply")
    .description("Create or update segments, templates, subscription groups, journeys and delivery policies from JSON/YAML files")
    .requiredOption("-f, --file <path...>", "a file or a directory (walked recursively for .json, .yaml, .yml)")
    .option("--dry-run", "ask the server what would be created or updated (every check runs), without writing")
    .addHelpText(
      "after",
      `
Each document names its kind and holds the resource, as PUT /api/admin/… takes it:

  kind: Segment
  name: Pro users
  definition:
    entryNode: { type: Trait, id: plan, path: plan, operator: { type: Equals, value: pro } }

Kinds: SubscriptionGroup, Segment, Template, Journey, Policies (written in that order; Policies:
the workspace's delivery policies, one document, see \`tidings policies --help\`). A resource is
matched by its id when the document has one, else by name. A reference to another resource
(segment, segmentId, exitSegmentId, templateId, subscriptionGroupId) may be written by name,
resolved against these files, then the workspace:

  - { id: hello, type: MessageNode, channel: Email, templateId: { name: Welcome }, child: ExitNode }

Every document is validated before anything is sent, each problem reported once at its
file:line:column; a resource whose stored fields equal the document's is reported unchanged.

The server writes every resource in one transaction (POST /api/admin/apply): all of them, or
none when one is refused — the error names its file. --dry-run asks the server to check the
same way and roll back, so the plan shows what the real run would meet (a name that belongs to
another resource, an unknown reference). A 409 on a name: the name is taken by a resource with
another id; drop \`id\` from the document to update that one, or choose another name.`,
    )
    .action(
      action(async (ctx, opts: ApplyOptions) => {
        const docs = await loadDocuments(opts.file, (kinds) => storedOf(ctx.api, kinds));
        const dryRun = opts.dryRun === true;
        let outcomes: ApplyOutcome[];
        try {
          outcomes = await applyDocuments(ctx.api, docs, { dryRun, workspaceId: ctx.connection.workspaceId });
        } catch (err) {
          if (!isTidingsApiError(err) || err.status === 0) throw err;
          // The server answered: its transaction wrote nothing. Say so under the error.
          reportError(err);
          ctx.out.note(
            dryRun ? "the dry run stopped here; nothing was written" : "nothing was written (apply writes every resource or none)",
          );
          return;
        }
        print(ctx, outcomes, dryRun);
      }),
    );
}
