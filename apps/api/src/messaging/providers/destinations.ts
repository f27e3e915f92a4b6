// Where a provider's config sends messages and secrets, checked at PUT by the outbound guard (the
// sends check again, on the addresses they connect to): a destination the guard would refuse is
// saved with a warning, so the first failed delivery is not the first sign.
import type { ProviderType, TemplateWarning } from "@tidings/schema";
import type { OutboundGuard } from "../../outbound/index.ts";

/** How long a PUT waits for a destination's host name to resolve before it warns that it could not. */
const LOOKUP_TIMEOUT_MS = 1000;

type Destination = { path: string; target: URL | { host: string; port: number } };

/** The destinations a complete config (plain fields and secrets) names; the providers' own defaults are not checked. */
export function providerDestinations(type: ProviderType, config: Record<string, unknown>): Destination[] {
  const out: Destination[] = [];
  const url = (path: string, value: unknown) => {
    if (typeof value !== "string") return;
    try {
      out.push({ path, target: new URL(value) });
    } catch {
      // The schema checked it is a URL; nothing to warn about otherwise.
    }
  };
  if (type === "Smtp" && typeof config.host === "string" && typeof config.port === "number") {
    out.push({ path: "config.host", target: { host: config.host, port: config.port } });
  }
  if (type === "Twilio" || type === "Expo" || type === "Fcm") url("config.baseUrl", config.baseUrl);
  if (type === "Fcm" && typeof config.serviceAccountJson === "string") {
    try {
      url("config.serviceAccountJson.token_uri", (JSON.parse(config.serviceAccountJson) as { token_uri?: unknown }).token_uri);
    } catch {
      // An unreadable key file fails its sends with the reason.
    }
  }
  return out;
}

export async function destinationWarnings(
  type: ProviderType,
  config: Record<string, unknown>,
  guard: OutboundGuard,
): Promise<TemplateWarning[]> {
  const checks = providerDestinations(type, config).map(async ({ path, target }) => {
    const verdict = await guard.check(target, { timeoutMs: LOOKUP_TIMEOUT_MS });
    if (!verdict) return undefined;
    const message =
      "refused" in verdict
        ? `sends to it will fail (destination refused): ${verdict.refused}`
        : `${verdict.unresolved}, so it was not checked against the outbound guard (sends check it again and fail if it is refused)`;
    return { path, message };
  });
  return (await Promise.all(checks)).filter((w): w is TemplateWarning => w !== undefined);
}
