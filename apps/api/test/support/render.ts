// In-process rendering for tests of what a render thread computes (the server renders in its
// render pool, templates/render-pool.ts, with these same functions).
import type { EmailTemplate, MessageTemplateDefinition, RenderedFields } from "@tidings/schema";
import { emailFromFields } from "../../src/templates/render-email.ts";
import { type RenderScope, renderFields } from "../../src/templates/liquid.ts";

const BUDGET = { timeMs: 1000, memory: 10_000_000 };

/** The rendered fields, or an error carrying the issues a preview answers. */
export async function renderDefinition(
  definition: MessageTemplateDefinition,
  scope: RenderScope,
  prefix = "definition",
): Promise<RenderedFields> {
  const out = renderFields(definition, scope, BUDGET, prefix);
  if (!out.ok) throw Object.assign(new Error(out.message), { issues: out.issues });
  return out.rendered;
}

/** An Email as sent: its fields and the text part. */
export async function renderEmail(definition: EmailTemplate, scope: RenderScope) {
  return emailFromFields(await renderDefinition(definition, scope));
}
