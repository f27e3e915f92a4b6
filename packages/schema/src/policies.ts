// Delivery policies (PRODUCT §13): per-workspace rules that hold messages back — frequency
// caps, send windows in each user's time zone, provider rates. A held message is Deferred with
// the reason and the time it may go, never dropped unless a rule says `skip`.
import { z } from "./zod.js";
import { EpochMillis, RequestWorkspaceId, serverManagedFields, WorkspaceId } from "./common.js";
import { ProviderType } from "./providers.js";
import { MessageCategory } from "./categories.js";
import { Channel } from "./subscription-groups.js";

/** Whether the runtime (Node's ICU, a browser) knows an IANA zone. */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

export const TimeZone = z
  .string()
  .min(1)
  .max(64)
  .refine(isTimeZone, { message: "not an IANA time zone (e.g. Europe/Berlin, America/New_York, Asia/Kathmandu)" })
  .describe("An IANA time zone, e.g. `America/New_York`.");

export const Weekday = z.enum(["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]);
export type Weekday = z.infer<typeof Weekday>;

export const LocalTime = z
  .string()
  .regex(/^(?:[01]\d|2[0-3]):[0-5]\d$|^24:00$/, "a local time `HH:MM` (00:00–24:00)")
  .describe("A local time of day, `HH:MM` (`24:00`: the end of the day).");

export const PolicyAction = z
  .enum(["defer", "skip"])
  .describe("`defer` (default): hold the message and send it when the rule allows. `skip`: record it `Skipped` with the reason.");
export type PolicyAction = z.infer<typeof PolicyAction>;

const ruleName = z.string().trim().min(1).max(100).describe('Names the rule in reasons (`held by frequency cap "…"`).');
const scope = {
  channel: Channel.optional().describe("Only messages of this channel (default: every channel)."),
  category: MessageCategory.optional().describe("Only messages of this category (default: every category but `transactional`)."),
};

export const CapWindow = z
  .strictObject({
    seconds: z
      .number()
      .int()
      .min(1)
      .max(31 * 86_400)
      .optional()
      .describe("A rolling window of this many seconds."),
    days: z
      .number()
      .int()
      .min(1)
      .max(31)
      .optional()
      .describe("Calendar days in the user's zone: 1 is today (since local midnight), 7 is today and the six days before."),
  })
  .refine((w) => (w.seconds === undefined) !== (w.days === undefined), { message: "give exactly one of `seconds` and `days`" });
export type CapWindow = z.infer<typeof CapWindow>;

export const FrequencyCap = z
  .strictObject({
    name: ruleName,
    limit: z.number().int().min(1).max(1000).describe("At most this many messages per user in the window."),
    window: CapWindow,
    ...scope,
    action: PolicyAction.default("defer"),
  })
  .describe(
    "At most `limit` messages per user in the window. Counted: messages a provider accepted (and ones being sent); failed, skipped and deferred ones are not. A deferred message may go when the oldest counted send leaves the window.",
  );
export type FrequencyCap = z.infer<typeof FrequencyCap>;

export const SendWindow = z
  .strictObject({
    name: ruleName,
    ...scope,
    days: z
      .array(Weekday)
      .min(1)
      .max(7)
      .default(["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"])
      .describe("The local weekdays the window opens on (default: every day). A window across midnight belongs to the day it opens."),
    from: LocalTime.describe("Local opening time."),
    to: LocalTime.describe("Local closing time; before `from`: the window runs across midnight (22:00–06:00)."),
    action: PolicyAction.default("defer"),
  })
  .refine((w) => w.from !== w.to, { message: "`from` and `to` are the same time: use 00:00–24:00 for the whole day", path: ["to"] })
  .describe(
    "Messages in scope go out only between `from` and `to` on `days`, in the user's zone; outside it they wait for the next opening (quiet hours are the time outside the window).",
  );
export type SendWindow = z.infer<typeof SendWindow>;

export const ProviderRate = z
  .strictObject({
    provider: ProviderType,
    perSecond: z.number().positive().max(100_000).describe("Messages per second, across every worker process."),
    burst: z.number().int().min(1).max(100_000).default(1).describe("Messages that may go at once after a quiet spell."),
  })
  .describe(
    "Paces every message of the workspace's provider of this type. Published limits: Twilio long code 1/s, toll-free 3/s, short code 100/s; Expo 600/s; FCM 10 000/s (600 000 a minute). Expo is paced at 600/s without a rule.",
  );
export type ProviderRate = z.infer<typeof ProviderRate>;

/** The time-to-live of a deferred message without a category rule: 72 hours. */
export const DEFAULT_TTL_SECONDS = 72 * 3600;

export const CategorySettings = z.strictObject({
  category: MessageCategory,
  timeToLiveSeconds: z
    .number()
    .int()
    .min(60)
    .max(30 * 86_400)
    .describe("A message of this category held longer than this after it was queued is Skipped."),
});

export const PoliciesBody = z
  .strictObject({
    workspaceId: RequestWorkspaceId,
    defaultTimezone: TimeZone.optional().describe("The zone of users without a valid `timezone` trait (default UTC)."),
    timeToLiveSeconds: z
      .number()
      .int()
      .min(60)
      .max(30 * 86_400)
      .default(DEFAULT_TTL_SECONDS)
      .describe("How long a message may be held before it is Skipped (default 72 h); per category in `categories`."),
    categories: z.array(CategorySettings).max(50).default([]),
    frequencyCaps: z.array(FrequencyCap).max(20).default([]),
    sendWindows: z.array(SendWindow).max(20).default([]),
    providerRates: z.array(ProviderRate).max(10).default([]),
    ...serverManagedFields,
  })
  .superRefine((p, ctx) => {
    const once = (list: { name?: string; provider?: string; category?: string }[], key: "name" | "provider" | "category", at: string) => {
      const seen = new Set<string>();
      list.forEach((item, i) => {
        const value = item[key];
        if (value === undefined) return;
        if (seen.has(value)) ctx.addIssue({ code: "custom", path: [at, i, key], message: `${JSON.stringify(value)} is given twice` });
        seen.add(value);
      });
    };
    once(p.frequencyCaps, "name", "frequencyCaps");
    once(p.sendWindows, "name", "sendWindows");
    once(p.providerRates, "provider", "providerRates");
    once(p.categories, "category", "categories");
  })
  .describe("Replaces the workspace's delivery policies (every list in full).");
export type PoliciesBody = z.input<typeof PoliciesBody>;

export const PoliciesResource = z
  .object({
    workspaceId: WorkspaceId,
    defaultTimezone: z.string().optional(),
    timeToLiveSeconds: z.number().int(),
    categories: z.array(CategorySettings),
    frequencyCaps: z.array(FrequencyCap),
    sendWindows: z.array(SendWindow),
    providerRates: z.array(ProviderRate),
    updatedAt: EpochMillis.optional().describe("Absent until the policies are first set."),
  })
  .openapi("Policies");
export type PoliciesResource = z.infer<typeof PoliciesResource>;
export type Policies = Omit<PoliciesResource, "workspaceId" | "updatedAt">;
