// `tidings policies`: the workspace's delivery policies — what holds messages back — as tables,
// or (`-o yaml`) as the document `tidings apply -f` takes (`kind: Policies`).
import type { FrequencyCap, PoliciesResource, ProviderRate, SendWindow } from "@tidings/schema";
import { type Command, Option } from "commander";
import { action, type Ctx } from "../context.js";
import type { Column } from "../output.js";

const scope = (r: { channel?: string; category?: string }) =>
  `${r.channel ?? "every channel"}, ${r.category ?? "every category but transactional"}`;
const span = (c: FrequencyCap) =>
  c.window.seconds !== undefined ? `${c.window.seconds} s (rolling)` : `${c.window.days} day${c.window.days === 1 ? "" : "s"} (local)`;

const capColumns: Column<FrequencyCap>[] = [
  { header: "CAP", value: (c) => c.name },
  { header: "LIMIT", value: (c) => c.limit, right: true },
  { header: "PER", value: span },
  { header: "SCOPE", value: scope },
  { header: "OVER IT", value: (c) => c.action },
];
const windowColumns: Column<SendWindow>[] = [
  { header: "WINDOW", value: (w) => w.name },
  { header: "OPEN (LOCAL)", value: (w) => `${w.from}–${w.to}` },
  { header: "DAYS", value: (w) => (w.days.length === 7 ? "every day" : w.days.join(" ")) },
  { header: "SCOPE", value: scope },
  { header: "OUTSIDE IT", value: (w) => w.action },
];
const rateColumns: Column<ProviderRate>[] = [
  { header: "PROVIDER", value: (r) => r.provider },
  { header: "PER SECOND", value: (r) => r.perSecond, right: true },
  { header: "BURST", value: (r) => r.burst, right: true },
];

const hours = (s: number) => (s % 3600 === 0 ? `${s / 3600} h` : `${s} s`);

function print(ctx: Ctx, p: PoliciesResource) {
  ctx.out.table(p.frequencyCaps, capColumns, "(no frequency caps)");
  ctx.out.line("");
  ctx.out.table(p.sendWindows, windowColumns, "(no send windows)");
  ctx.out.line("");
  ctx.out.table(p.providerRates, rateColumns, "(no provider rates: Expo is paced at its published 600/s)");
  ctx.out.line("");
  const perCategory = p.categories.map((c) => `${c.category}: ${hours(c.timeToLiveSeconds)}`).join(", ");
  ctx.out.line(`held at most: ${hours(p.timeToLiveSeconds)}${perCategory ? ` (${perCategory})` : ""}, then skipped`);
  ctx.out.line(`users without a timezone trait: ${p.defaultTimezone ?? "UTC"}`);
}

export function registerPolicyCommands(program: Command) {
  program
    .command("policies")
    .description("Show the workspace's delivery policies: frequency caps, send windows, provider rates, time-to-live")
    .addOption(
      new Option("-o, --output <format>", "table, or yaml: the document `tidings apply -f` takes")
        .choices(["table", "yaml"])
        .default("table"),
    )
    .addHelpText(
      "after",
      `
Set them with \`tidings apply -f policies.yaml\` (every list is replaced in full):

  kind: Policies
  defaultTimezone: America/New_York
  frequencyCaps:
    - { name: three a day, limit: 3, window: { days: 1 } }
    - { name: one sms an hour, limit: 1, window: { seconds: 3600 }, channel: Sms }
  sendWindows:
    - { name: daytime sms, channel: Sms, from: "09:00", to: "21:00" }
  providerRates:
    - { provider: Twilio, perSecond: 1 }

A message a rule holds is Deferred, with the rule and the time it may go (notBefore), and is
checked again then; \`action: skip\` skips it instead. \`tidings deliveries list --status deferred\`
shows what waits.`,
    )
    .action(
      action(async (ctx, opts: { output: "table" | "yaml" }) => {
        const p = await ctx.api.call("policies.get", {});
        if (ctx.json) return ctx.out.data(p);
        if (opts.output === "yaml") {
          const { workspaceId: _w, updatedAt: _u, ...rules } = p;
          return ctx.out.yaml({ kind: "Policies", ...rules });
        }
        print(ctx, p);
      }),
    );
}
