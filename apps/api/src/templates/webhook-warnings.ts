// A template whose webhook URL the send-time guard would refuse (a loopback, private, link-local, …
// address, or a name resolving to one, unless allow-listed) is saved — a receiver may be set up
// later, or allow-listed — but the PUT answers a warning, so the first failed delivery is not the
// first sign. The check is the sender's own guard (src/outbound/guard.ts).
import type { MessageTemplateDefinition, TemplateWarning } from "@tidings/schema";
import type { OutboundGuard } from "../outbound/index.ts";

/** How long a PUT waits for a webhook host name to resolve before it warns that it could not. */
export const WEBHOOK_LOOKUP_TIMEOUT_MS = 1000;

export interface WebhookWarningOptions {
  guard: OutboundGuard;
  timeoutMs?: number;
}

async function urlWarning(url: string, options: WebhookWarningOptions): Promise<string | undefined> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined; // Liquid in the scheme or host: the send checks the URL as rendered.
  }
  const host = parsed.hostname.toLowerCase();
  if (host.includes("{") || host.includes("%7b")) return undefined;
  const verdict = await options.guard.check(parsed, { timeoutMs: options.timeoutMs ?? WEBHOOK_LOOKUP_TIMEOUT_MS });
  if (!verdict) return undefined;
  if ("refused" in verdict) return `sends to it will fail (webhook target refused): ${verdict.refused}`;
  return `${verdict.unresolved}, so it was not checked against the webhook target guard (sends check it again and fail if it is refused)`;
}

/** Warnings for the webhook URLs of a template's definition and draft (paths `definition.url`, `draft.url`). */
export async function webhookWarnings(
  template: { definition?: MessageTemplateDefinition | null; draft?: MessageTemplateDefinition | null },
  options: WebhookWarningOptions,
): Promise<TemplateWarning[]> {
  const checks = (["definition", "draft"] as const).map(async (field) => {
    const def = template[field];
    if (def?.type !== "Webhook") return undefined;
    const message = await urlWarning(def.url, options);
    return message ? { path: `${field}.url`, message } : undefined;
  });
  return (await Promise.all(checks)).filter((w): w is TemplateWarning => w !== undefined);
}
