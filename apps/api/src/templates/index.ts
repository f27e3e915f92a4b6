// Templates: message templates (LiquidJS, one definition per channel), and the render pool where
// every template is parsed and rendered, off the event loop, for previews and sends alike.
import type { ResolvedConfig } from "../config.ts";
import type { PrismaClient } from "../db/client.ts";
import type { Module } from "../http/module.ts";
import type { OutboundGuard } from "../outbound/index.ts";
import { RenderPool } from "./render-pool.ts";
import { templateRoutes } from "./routes.ts";

export type { EmailRendered } from "./render-email.ts";
export { type MessageInput, type MessageRender, RenderPool } from "./render-pool.ts";
export { assertTemplateSyntax, upsertTemplate } from "./service.ts";
export { webhookWarnings } from "./webhook-warnings.ts";

export interface TemplatesDeps {
  prisma: PrismaClient;
  guard: OutboundGuard;
  config: Pick<ResolvedConfig, "secretKey" | "publicUrl" | "render">;
}

export function createTemplates({ prisma, guard, config }: TemplatesDeps) {
  const renders = new RenderPool({
    secretKey: config.secretKey,
    publicUrl: config.publicUrl,
    threads: config.render.threads,
    timeMs: config.render.timeLimitMs,
  });
  return { renders, module: { adminRoutes: templateRoutes({ prisma, renders, guard }), close: () => renders.close() } satisfies Module };
}
