// `tidings broadcasts execute|get|list|cancel`: one-off sends to an audience, followed live.
import { type BroadcastResource, ExecuteBroadcastRequestBody } from "@tidings/schema";
import { type Command, Option } from "commander";
import { action, type Ctx, isUuid, positiveInt } from "../context.js";
import { notFoundByName, UsageError, zodIssues } from "../errors.js";
import { readDataFile } from "../files.js";
import { bar, type Column, formatTime, Progress } from "../output.js";
import { kindByName, resolveResource } from "../resources.js";

interface ExecuteOptions {
  name: string;
  segment?: string;
  segmentId?: string;
  template?: string;
  templateId?: string;
  subscriptionGroup?: string;
  rate?: number;
  category?: string;
  atLocalTime?: string;
  ifPassed?: "tomorrow" | "now";
  wait?: boolean;
}

const columns: Column<BroadcastResource>[] = [
  { header: "NAME", value: (b) => b.name },
  { header: "ID", value: (b) => b.id },
  { header: "STATUS", value: (b) => b.status },
  { header: "CHANNEL", value: (b) => b.channel },
  { header: "AUDIENCE", value: (b) => b.counts.audience, right: true },
  { header: "SENT", value: (b) => b.counts.sent, right: true },
  { header: "FAILED", value: (b) => b.counts.failed, right: true },
  { header: "SKIPPED", value: (b) => b.counts.skipped, right: true },
  { header: "PENDING", value: (b) => b.counts.pending, right: true },
  { header: "CREATED", value: (b) => formatTime(b.createdAt) },
];

/** A segment or template file holds either the definition itself or a resource with `definition`. */
function definitionOf(value: unknown): unknown {
  if (value && typeof value === "object" && !Array.isArray(value)) {
    const { kind: _kind, ...rest } = value as Record<string, unknown>;
    return "definition" in rest ? rest.definition : rest;
  }
  return value;
}

async function resolveId(ctx: Ctx, kindName: string, ref: string | undefined): Promise<string | undefined> {
  if (ref === undefined || isUuid(ref)) return ref;
  return (await resolveResource(ctx.api, kindByName.get(kindName)!, ref)).id;
}

/** The broadcast of this name (broadcasts are listed page by page); exit 1 naming it when there is none. */
export async function findBroadcastByName(ctx: Ctx, name: string): Promise<BroadcastResource> {
  let cursor: string | undefined;
  do {
    const page = await ctx.api.call("broadcasts.list", { query: { limit: 500, cursor } });
    const found = page.items.find((b) => b.name === name.trim());
    if (found) return found;
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  throw notFoundByName("broadcast", name);
}

async function findBroadcast(ctx: Ctx, ref: string): Promise<BroadcastResource> {
  return isUuid(ref) ? ctx.api.call("broadcasts.get", { params: { id: ref } }) : findBroadcastByName(ctx, ref);
}

const describeCounts = (b: BroadcastResource) =>
  `${b.counts.sent} sent, ${b.counts.failed} failed, ${b.counts.skipped} skipped, ${b.counts.pending} pending of ${b.counts.audience}`;

function progressLine(b: BroadcastResource): string {
  const done = b.counts.sent + b.counts.failed + b.counts.skipped;
  const total = b.counts.audience;
  const pct = total ? Math.floor((done / total) * 100) : 0;
  return `${b.status.padEnd(9)} ${bar(total ? done / total : 0)} ${String(pct).padStart(3)}%  ${done}/${total}  sent ${b.counts.sent} · failed ${b.counts.failed} · skipped ${b.counts.skipped}`;
}

/** Polls until the broadcast finishes, drawing its progress on stderr. */
async function waitFor(ctx: Ctx, id: string): Promise<BroadcastResource> {
  const progress = new Progress();
  let status = "";
  const final = await ctx.api.waitForBroadcast(id, (b) => {
    progress.update(progressLine(b), b.status !== status);
    status = b.status;
  });
  progress.done();
  return final;
}

/** Exit codes of a followed broadcast (--wait), as `--help` lists them. */
const WAIT_EXIT_CODES = `Exit codes with --wait: 0 the broadcast completed and every message was sent (skips for
opted-out users or missing contact points aside); 3 it completed but some message failed or none
was sent; 1 it failed or was cancelled (or an API error); 2 usage error. See why a message failed
or was skipped with: tidings deliveries list --broadcast <id-or-name> --status failed|skipped`;

function report(ctx: Ctx, b: BroadcastResource) {
  if (ctx.json) ctx.out.data(b);
  else ctx.out.line(`Broadcast "${b.name}" (${b.id}) ${b.status}: ${describeCounts(b)}${b.reason ? ` — ${b.reason}` : ""}`);
  if (b.status !== "Completed") {
    process.exitCode = 1;
    return;
  }
  if (b.counts.failed > 0 || b.counts.sent === 0) {
    process.exitCode = 3;
    const status = b.counts.failed > 0 ? "failed" : "skipped";
    ctx.out.note(
      `${b.counts.failed > 0 ? "some messages failed" : "nothing was sent"}; see why: tidings deliveries list --broadcast ${b.id} --status ${status}`,
    );
  }
}

export function registerBroadcastCommands(program: Command) {
  const group = program.command("broadcasts").description("Send one message to every member of an audience, once");

  group
    .command("execute")
    .description("Execute a broadcast (idempotent per --name: a repeat sends nothing and says so)")
    .requiredOption("--name <name>", "broadcast name: a repeat with the same name and inputs sends nothing new")
    .option("--segment <file>", "audience: a segment definition file (JSON/YAML; a Segment document works too)")
    .option("--segment-id <id-or-name>", "audience: a stored segment")
    .option("--template <file>", "message: a template definition file (JSON/YAML; a Template document works too)")
    .option("--template-id <id-or-name>", "message: a stored template")
    .option("--subscription-group <id-or-name>", "send within this subscription group (unsubscribe link, opt-outs)")
    .addOption(new Option("--rate <n>", "at most n messages per second").argParser(positiveInt(100_000)))
    .option("--category <category>", "the messages' category for delivery policies (default: the template's)")
    .option(
      "--at-local-time <HH:MM>",
      "send each member's message at this time in the member's zone (timezone trait, else the policies' default zone, else UTC)",
    )
    .addOption(
      new Option("--if-passed <when>", "with --at-local-time: a member whose time has passed today gets it tomorrow, or now").choices([
        "tomorrow",
        "now",
      ]),
    )
    .option("--wait", "follow the broadcast until it finishes (progress on stderr; exit codes below)")
    .addHelpText("after", `\n${WAIT_EXIT_CODES}`)
    .action(
      action(async (ctx, opts: ExecuteOptions) => {
        if ((opts.segment === undefined) === (opts.segmentId === undefined))
          throw new UsageError("give exactly one of --segment <file> and --segment-id <id>");
        if ((opts.template === undefined) === (opts.templateId === undefined))
          throw new UsageError("give exactly one of --template <file> and --template-id <id>");
        const body: Record<string, unknown> = {
          broadcastName: opts.name,
          ...(opts.segment !== undefined ? { segmentDefinition: definitionOf(readDataFile(opts.segment, "--segment")) } : {}),
          ...(opts.template !== undefined ? { messageTemplateDefinition: definitionOf(readDataFile(opts.template, "--template")) } : {}),
          ...(opts.rate !== undefined ? { rateLimitPerSecond: opts.rate } : {}),
          ...(opts.category !== undefined ? { category: opts.category } : {}),
          ...(opts.atLocalTime !== undefined ? { sendAtLocalTime: opts.atLocalTime } : {}),
          ...(opts.ifPassed !== undefined ? { ifLocalTimePassed: opts.ifPassed } : {}),
        };
        // Files are checked before anything is sent (ids are checked by the server).
        const checked = ExecuteBroadcastRequestBody.safeParse({
          ...body,
          ...(opts.segmentId ? { segmentId: "00000000-0000-4000-8000-000000000000" } : {}),
          ...(opts.templateId ? { templateId: "00000000-0000-4000-8000-000000000000" } : {}),
        });
        if (!checked.success) {
          const named = zodIssues(checked.error).map((line) =>
            line
              .replace(/^segmentDefinition\.?/, `--segment ${opts.segment}: `)
              .replace(/^messageTemplateDefinition\.?/, `--template ${opts.template}: `),
          );
          throw new UsageError("the broadcast is invalid; nothing was sent", named);
        }
        const segmentId = await resolveId(ctx, "Segment", opts.segmentId);
        const templateId = await resolveId(ctx, "Template", opts.templateId);
        const subscriptionGroupId = await resolveId(ctx, "SubscriptionGroup", opts.subscriptionGroup);
        const started = await ctx.api.call("broadcasts.execute", {
          body: { ...(body as { broadcastName: string }), segmentId, templateId, subscriptionGroupId },
        });
        // Idempotent per name: a repeat answers the broadcast executed before and sends nothing.
        const repeat = started.repeat === true;
        if (repeat) {
          const on = started.createdAt !== undefined ? ` on ${formatTime(started.createdAt)} UTC` : "";
          ctx.out.note(`Broadcast "${started.broadcastName}" was already executed${on}; nothing sent (use another --name to send again)`);
        }
        if (!opts.wait) {
          if (ctx.json) return ctx.out.data(started);
          if (!repeat) {
            ctx.out.line(`Broadcast "${started.broadcastName}" (${started.broadcastId}) is ${started.status}`);
            ctx.out.note(`follow it with: tidings broadcasts get ${started.broadcastId}`);
            return;
          }
          const b = await ctx.api.call("broadcasts.get", { params: { id: started.broadcastId } });
          ctx.out.line(`Broadcast "${b.name}" (${b.id}) ${b.status}: ${describeCounts(b)}${b.reason ? ` — ${b.reason}` : ""}`);
          return;
        }
        report(ctx, await waitFor(ctx, started.broadcastId));
      }),
    );

  group
    .command("list")
    .description("List broadcasts, newest first")
    .addOption(new Option("--limit <n>", "page size").argParser(positiveInt(500)).default(50))
    .option("--cursor <cursor>", "continue from a previous page's nextCursor")
    .action(
      action(async (ctx, opts: { limit: number; cursor?: string }) => {
        const page = await ctx.api.call("broadcasts.list", { query: { limit: opts.limit, cursor: opts.cursor } });
        if (ctx.json) return ctx.out.data(page);
        ctx.out.table(page.items, columns, "(no broadcasts)");
        if (page.nextCursor) ctx.out.note(`more: --cursor ${page.nextCursor}`);
      }),
    );

  group
    .command("get")
    .description("Show a broadcast's status and counts")
    .argument("<id-or-name>", "the broadcast's id or name")
    .option("--wait", "follow it until it finishes (exit codes below)")
    .addHelpText("after", `\n${WAIT_EXIT_CODES}`)
    .action(
      action(async (ctx, ref: string, opts: { wait?: boolean }) => {
        const b = await findBroadcast(ctx, ref);
        if (opts.wait) return report(ctx, await waitFor(ctx, b.id));
        if (ctx.json) return ctx.out.data(b);
        ctx.out.table([b], columns);
        if (b.reason) ctx.out.line(`reason: ${b.reason}`);
      }),
    );

  group
    .command("cancel")
    .description("Cancel a broadcast: messages not yet sent are skipped")
    .argument("<id-or-name>", "the broadcast's id or name")
    .action(
      action(async (ctx, ref: string) => {
        const b = await findBroadcast(ctx, ref);
        const after = await ctx.api.call("broadcasts.cancel", { params: { id: b.id } });
        if (ctx.json) return ctx.out.data(after);
        ctx.out.line(`Broadcast "${after.name}" (${after.id}) ${after.status}: ${describeCounts(after)}`);
      }),
    );
}
