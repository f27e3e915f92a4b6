// `tidings deliveries list|get`: the messages sent (or not) and why — one row per user and
// broadcast, or per journey run and message node.
import { type DeliveryRecord, DeliveryStatus } from "@tidings/schema";
import { type Command, InvalidArgumentError, Option } from "commander";
import { action, isUuid, positiveInt } from "../context.js";
import { DeliveryNames } from "../delivery-sources.js";
import { type Column, formatTime } from "../output.js";
import { kindByName, resolveResource } from "../resources.js";
import { findBroadcastByName } from "./broadcasts.js";

const STATUSES: readonly DeliveryStatus[] = DeliveryStatus.options;

/** Accepts any case (`failed`), answers the API's spelling (`Failed`). */
function parseStatus(value: string): DeliveryStatus {
  const found = STATUSES.find((s) => s.toLowerCase() === value.toLowerCase());
  if (!found) throw new InvalidArgumentError(`expected one of ${STATUSES.join(", ")}`);
  return found;
}

/** The table's columns: SOURCE says which broadcast, or which journey and node, a delivery came from. */
const columns = (names: DeliveryNames): Column<DeliveryRecord>[] => [
  { header: "CREATED", value: (d) => formatTime(d.createdAt) },
  { header: "ID", value: (d) => d.id },
  { header: "USER", value: (d) => d.userId },
  { header: "CHANNEL", value: (d) => d.channel },
  { header: "STATUS", value: (d) => d.status },
  { header: "ATTEMPTS", value: (d) => d.attempts, right: true },
  { header: "SOURCE", value: (d) => names.source(d) },
  { header: "REASON", value: (d) => d.reason },
];

interface ListOptions {
  broadcast?: string;
  journey?: string;
  user?: string;
  status?: DeliveryStatus;
  limit: number;
  cursor?: string;
  all?: boolean;
}

export function registerDeliveryCommands(program: Command) {
  const group = program.command("deliveries").description("Show the messages sent to users, and why one failed or was skipped");

  group
    .command("list")
    .description(
      "List deliveries, newest first: the source of each (broadcast, or journey and node) and the reason of each failure or skip",
    )
    .option("--broadcast <id-or-name>", "only this broadcast's deliveries")
    .option("--journey <id-or-name>", "only this journey's deliveries")
    .option("--user <user-id>", "only this user's deliveries")
    .addOption(new Option("--status <status>", `only deliveries in this status (${STATUSES.join(", ")})`).argParser(parseStatus))
    .addOption(new Option("--limit <n>", "page size").argParser(positiveInt(500)).default(50))
    .option("--cursor <cursor>", "continue from a previous page's nextCursor")
    .option("--all", "every page, not just the first")
    .addHelpText(
      "after",
      `
Examples:
  tidings deliveries list --broadcast "Spring sale" --status failed
  tidings deliveries list --user user-42 --json`,
    )
    .action(
      action(async (ctx, opts: ListOptions) => {
        const query = {
          ...(opts.broadcast !== undefined
            ? { broadcastId: isUuid(opts.broadcast) ? opts.broadcast : (await findBroadcastByName(ctx, opts.broadcast)).id }
            : {}),
          ...(opts.journey !== undefined
            ? {
                journeyId: isUuid(opts.journey)
                  ? opts.journey
                  : (await resolveResource(ctx.api, kindByName.get("Journey")!, opts.journey)).id,
              }
            : {}),
          ...(opts.user !== undefined ? { userId: opts.user } : {}),
          ...(opts.status !== undefined ? { status: opts.status } : {}),
          limit: opts.limit,
        };
        const items: DeliveryRecord[] = [];
        let cursor = opts.cursor;
        let next: string | null;
        do {
          const page = await ctx.api.call("deliveries.list", { query: { ...query, cursor } });
          items.push(...page.items);
          next = page.nextCursor;
          cursor = next ?? undefined;
        } while (opts.all && next);
        if (ctx.json) return ctx.out.data({ items, nextCursor: next });
        const names = new DeliveryNames(ctx.api);
        await names.learn(items);
        ctx.out.table(items, columns(names), "(no deliveries)");
        if (next) ctx.out.note(`more: --cursor ${next} (or --all)`);
      }),
    );

  group
    .command("get")
    .description("Show one delivery: status, attempts, source, provider message id and reason")
    .argument("<id>", "the delivery's id")
    .action(
      action(async (ctx, id: string) => {
        const d = await ctx.api.call("deliveries.get", { params: { id } });
        if (ctx.json) return ctx.out.data(d);
        const names = new DeliveryNames(ctx.api);
        await names.learn([d]);
        ctx.out.yaml({
          id: d.id,
          user: d.userId,
          channel: d.channel,
          status: d.status,
          ...(d.reason ? { reason: d.reason } : {}),
          ...(d.notBefore ? { notBefore: formatTime(d.notBefore) } : {}),
          ...(d.timezone ? { timezone: `${d.timezone} (${d.timezoneSource})` } : {}),
          ...(d.category ? { category: d.category } : {}),
          attempts: d.attempts,
          source: names.source(d),
          ...(d.templateId ? { template: names.template(d) } : {}),
          ...(d.providerMessageId ? { providerMessageId: d.providerMessageId } : {}),
          created: formatTime(d.createdAt),
          updated: formatTime(d.updatedAt),
        });
      }),
    );
}
