// Browser origins in the configuration (CORS allow-lists), normalised as browsers send them.
import { z } from "zod";

/** Parses a comma-separated list of browser origins, normalised as browsers send them. */
export function parseOrigins(value: string, ctx: z.RefinementCtx): string[] {
  const origins: string[] = [];
  for (const item of value
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
    let url: URL | undefined;
    try {
      url = new URL(item);
    } catch {
      // reported below
    }
    if (!url || !/^https?:$/.test(url.protocol) || url.pathname !== "/" || url.search || url.hash || url.username || url.password) {
      ctx.addIssue({ code: "custom", message: `${JSON.stringify(item)} is not an origin such as https://app.example.com` });
      return z.NEVER;
    }
    origins.push(url.origin);
  }
  if (origins.length === 0) ctx.addIssue({ code: "custom", message: "lists no origin" });
  return origins;
}
