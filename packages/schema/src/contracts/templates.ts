// Message templates and the render preview.
import {
  MessageTemplateListQuery,
  MessageTemplateListResponse,
  MessageTemplateParams,
  MessageTemplateQuery,
  MessageTemplateResource,
  RenderTemplateRequestBody,
  RenderTemplateResponse,
  UpsertMessageTemplateRequestBody,
} from "../templates.js";
import { adminErrors, defineContract } from "./contract.js";

const PATH = "/api/admin/content/templates";
const tags = ["Templates"] as const;

export const templateContracts = [
  defineContract({
    operationId: "templates.upsert",
    method: "PUT",
    path: PATH,
    auth: "admin",
    tags,
    summary: "Create or update a message template",
    description: [
      "Upserts by `id` when given (an id not yet in the workspace creates the template with that id), else by (`workspaceId`, `name`); answers 200 with the stored template.",
      "`definition` and `draft` are kept when omitted and removed when `null`. `type`, `createdAt` and `updatedAt` in the body are ignored; the response `type` is the channel of `definition`, else of `draft`, else `Email`.",
      "Every Liquid field is parsed before anything is stored: a syntax error is a 400 whose issue names the field (e.g. `definition.subject`). 409 when renaming onto the name of another template, or when a running journey uses the template and the change would leave it unable to send (its channel changed, its `definition` removed); the message names the journey.",
    ].join("\n\n"),
    body: UpsertMessageTemplateRequestBody,
    success: { status: 200, description: "The stored template.", schema: MessageTemplateResource },
    errors: adminErrors("CONFLICT"),
  }),
  defineContract({
    operationId: "templates.list",
    method: "GET",
    path: PATH,
    auth: "admin",
    tags,
    summary: "List message templates, ordered by name then id",
    query: MessageTemplateListQuery,
    success: { status: 200, description: "A page of templates.", schema: MessageTemplateListResponse },
    errors: adminErrors(),
  }),
  defineContract({
    operationId: "templates.get",
    method: "GET",
    path: `${PATH}/{id}`,
    auth: "admin",
    tags,
    summary: "Get a message template",
    params: MessageTemplateParams,
    query: MessageTemplateQuery,
    success: { status: 200, description: "The template.", schema: MessageTemplateResource },
    errors: adminErrors("NOT_FOUND"),
  }),
  defineContract({
    operationId: "templates.delete",
    method: "DELETE",
    path: `${PATH}/{id}`,
    auth: "admin",
    tags,
    summary: "Delete a message template",
    description: "409 while a running journey uses the template.",
    params: MessageTemplateParams,
    query: MessageTemplateQuery,
    success: { status: 204, description: "Deleted." },
    errors: adminErrors("NOT_FOUND", "CONFLICT"),
  }),
  defineContract({
    operationId: "templates.render",
    method: "POST",
    path: `${PATH}/render`,
    auth: "admin",
    tags,
    summary: "Render a template for a user (preview; sends nothing)",
    description: [
      "Renders a stored template (`templateId`, its `definition` or, with `source: draft`, its draft) or an inline `definition`, for a stored user (`userId`: its traits plus `id`) or an inline `user`.",
      "The Liquid scope is `user` (traits as `user.<trait>`, plus `user.id`), `event` (when given: as the entry event of an event-triggered journey), `workspace` ({id, name}) and `unsubscribe_url`: a signed link, valid for a year, to `GET/POST /api/public/subscriptions/unsubscribe` under the server's `TIDINGS_PUBLIC_URL` (never the request's `Host`).",
      "`unresolved` lists the variables that resolved to nothing for this user, each with its field (e.g. `user.userId` in `definition.body`: the id is `user.id`); they rendered as an empty string.",
      "Liquid errors (syntax, unknown filters, `{% include %}` — templates cannot read files —, the message's render time or memory budget run out) are a 400 naming the field. Rendering runs off the server's event loop, within one budget per message for all its fields (TIDINGS_RENDER_TIME_LIMIT_MS, default 250 ms). A workspace renders at most 2 previews at once per server process: more are a 429 with Retry-After. 404 for an unknown template, user or subscription group.",
    ].join("\n\n"),
    body: RenderTemplateRequestBody,
    success: { status: 200, description: "The rendered fields.", schema: RenderTemplateResponse },
    errors: adminErrors("NOT_FOUND", "RATE_LIMITED"),
  }),
] as const;
