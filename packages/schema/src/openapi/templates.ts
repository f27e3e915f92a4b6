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
import { adminErrors, adminSecurity, json, registry } from "./registry.js";

const PATH = "/api/admin/content/templates";
const tags = ["Templates"];

export function registerTemplatesPaths() {
  registry.registerPath({
    method: "put",
    path: PATH,
    tags,
    summary: "Create or update a message template",
    description: [
      "Upserts by `id` when given (an id not yet in the workspace creates the template with that id), else by (`workspaceId`, `name`); answers 200 with the stored template.",
      "`definition` and `draft` are kept when omitted and removed when `null`. `type`, `createdAt` and `updatedAt` in the body are ignored; the response `type` is the channel of `definition`, else of `draft`, else `Email`.",
      "Every Liquid field is parsed before anything is stored: a syntax error is a 400 whose issue names the field (e.g. `definition.subject`). 409 when renaming onto the name of another template.",
    ].join("\n\n"),
    security: adminSecurity,
    request: { body: json(UpsertMessageTemplateRequestBody) },
    responses: { 200: { description: "The stored template.", ...json(MessageTemplateResource) }, ...adminErrors("CONFLICT") },
  });

  registry.registerPath({
    method: "get",
    path: PATH,
    tags,
    summary: "List message templates, ordered by name then id",
    security: adminSecurity,
    request: { query: MessageTemplateListQuery },
    responses: { 200: { description: "A page of templates.", ...json(MessageTemplateListResponse) }, ...adminErrors() },
  });

  registry.registerPath({
    method: "get",
    path: `${PATH}/{id}`,
    tags,
    summary: "Get a message template",
    security: adminSecurity,
    request: { params: MessageTemplateParams, query: MessageTemplateQuery },
    responses: { 200: { description: "The template.", ...json(MessageTemplateResource) }, ...adminErrors("NOT_FOUND") },
  });

  registry.registerPath({
    method: "delete",
    path: `${PATH}/{id}`,
    tags,
    summary: "Delete a message template",
    description: "409 while a running journey uses the template.",
    security: adminSecurity,
    request: { params: MessageTemplateParams, query: MessageTemplateQuery },
    responses: { 204: { description: "Deleted." }, ...adminErrors("NOT_FOUND", "CONFLICT") },
  });

  registry.registerPath({
    method: "post",
    path: `${PATH}/render`,
    tags,
    summary: "Render a template for a user (preview; sends nothing)",
    description: [
      "Renders a stored template (`templateId`, its `definition` or, with `source: draft`, its draft) or an inline `definition`, for a stored user (`userId`: its traits plus `id`) or an inline `user`.",
      "The Liquid scope is `user`, `event` (when given), `workspace` ({id, name}) and `unsubscribe_url`: a signed link, valid for a year, to `GET/POST /api/public/subscriptions/unsubscribe` on the host this request was sent to.",
      "Liquid errors (syntax, unknown filters, `{% include %}` — templates cannot read files —, render time or memory limits) are a 400 naming the field. 404 for an unknown template, user or subscription group.",
    ].join("\n\n"),
    security: adminSecurity,
    request: { body: json(RenderTemplateRequestBody) },
    responses: { 200: { description: "The rendered fields.", ...json(RenderTemplateResponse) }, ...adminErrors("NOT_FOUND") },
  });
}
