// A render thread (render-pool.ts): every Liquid parse and render of the server runs here, each
// message within its budget, so no template can stall the server's event loop; a thread that runs
// past its task's hard deadline is terminated by the pool.
import type { ErrorIssue, MessageTemplateDefinition } from "@tidings/schema";
import { workerData } from "piscina";
import { emailFromFields } from "./render-email.ts";
import { signUnsubscribeToken, unsubscribeUrl } from "../subscription-groups/index.ts";
import { liquidSyntaxIssues, type RenderBudget, type RenderScope, renderFields, unresolvedVariables } from "./liquid.ts";
import type { MessageInput, MessageRender, PreviewRender, RenderThreadSettings } from "./render-pool.ts";

const settings = workerData as RenderThreadSettings;

/** The Liquid scope of one message; its unsubscribe link is signed only when a template reads it. */
function scopeOf(m: MessageInput): RenderScope {
  let url: string | undefined;
  return {
    user: m.user,
    ...(m.event ? { event: m.event } : {}),
    workspace: m.workspace,
    get unsubscribe_url() {
      url ??= unsubscribeUrl(settings.publicUrl, signUnsubscribeToken(settings.secretKey, m.unsubscribe));
      return url;
    },
  };
}

function renderOne(definition: MessageTemplateDefinition, m: MessageInput, budget: RenderBudget, forSending: boolean): MessageRender {
  const scope = scopeOf(m);
  const out = renderFields(definition, scope, budget);
  if (!out.ok) return { ok: false, reason: `render error: ${out.issues.map((i) => `${i.path}: ${i.message}`).join("; ")}` };
  const rendered = forSending && definition.type === "Email" ? emailFromFields(out.rendered) : out.rendered;
  // Email within a subscription group carries the one-click unsubscribe link.
  const unsubscribe = forSending && definition.type === "Email" && m.unsubscribe.subscriptionGroupId ? scope.unsubscribe_url : undefined;
  return { ok: true, rendered: rendered as Record<string, unknown>, ...(unsubscribe ? { unsubscribeUrl: unsubscribe } : {}) };
}

/** Messages of one template, as sent. */
export function render(task: { definition: MessageTemplateDefinition; messages: MessageInput[] }): MessageRender[] {
  return task.messages.map((m) => renderOne(task.definition, m, settings.budget, true));
}

/** The render preview: the fields as the API shows them, and the variables that resolve to nothing. */
export function preview(task: { definition: MessageTemplateDefinition; message: MessageInput; prefix: string }): PreviewRender {
  const scope = scopeOf(task.message);
  const out = renderFields(task.definition, scope, settings.budget, task.prefix);
  if (!out.ok) return out;
  return { ok: true, rendered: out.rendered, unresolved: unresolvedVariables(task.definition, scope, task.prefix) };
}

/** Liquid syntax errors of a definition, one issue per field. */
export function check(task: { definition: MessageTemplateDefinition; prefix: string }): ErrorIssue[] {
  return liquidSyntaxIssues(task.prefix, task.definition);
}
