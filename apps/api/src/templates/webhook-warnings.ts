// A template whose webhook URL the send-time guard would refuse (loopback, private, link-local, …
// unless allow-listed) is saved — a receiver may be set up later, or allow-listed — but the PUT
// answers a warning, so the first failed delivery is not the first sign.
import type { MessageTemplateDefinition, TemplateWarning } from "@tidings/schema";
import { isIP } from "node:net";
import { forbiddenAddressKind } from "../messaging/channels/webhook.ts";

function urlWarning(url: string, allowedHosts: readonly string[]): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined; // Liquid in the scheme or host: known only when rendered.
  }
  const host = parsed.hostname.toLowerCase();
  if (host.includes("{") || host.includes("%7b")) return undefined;
  if (allowedHosts.some((h) => h.trim().toLowerCase() === host)) return undefined;
  const ip = host.startsWith("[") ? host.slice(1, -1) : host;
  const kind = isIP(ip) ? forbiddenAddressKind(ip) : host === "localhost" || host.endsWith(".localhost") ? "loopback" : undefined;
  if (!kind) return undefined;
  return `${parsed.host} is a ${kind} address: sends to it will fail (webhook target refused); add the host to TIDINGS_WEBHOOK_ALLOWED_HOSTS to allow it`;
}

/** Warnings for the webhook URLs of a template's definition and draft (paths `definition.url`, `draft.url`). */
export function webhookWarnings(
  template: { definition?: MessageTemplateDefinition | null; draft?: MessageTemplateDefinition | null },
  allowedHosts: readonly string[],
): TemplateWarning[] {
  const warnings: TemplateWarning[] = [];
  for (const field of ["definition", "draft"] as const) {
    const def = template[field];
    if (def?.type !== "Webhook") continue;
    const message = urlWarning(def.url, allowedHosts);
    if (message) warnings.push({ path: `${field}.url`, message });
  }
  return warnings;
}
