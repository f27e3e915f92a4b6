// Message templates: one definition per channel (every string field is a LiquidJS template),
// the admin wire shapes around them, and the render preview.
import { z } from "./zod.js";
import { MessageCategory } from "./categories.js";
import {
  EpochMillis,
  idParams,
  JsonObject,
  ListQuery,
  listResponse,
  RequestWorkspaceId,
  resourceName,
  ServerManaged,
  serverManagedFields,
  WorkspaceId,
  WorkspaceQuery,
} from "./common.js";
import { Channel } from "./subscription-groups.js";

/** Entries of a template's map (headers, push data): each is a template rendered with every message. */
export const TEMPLATE_MAP_MAX_ENTRIES = 50;

const liquid = (what: string, max = 10_000) => z.string().max(max).describe(`${what} (LiquidJS template).`);
const LiquidMap = (what: string) =>
  z
    .record(z.string().min(1).max(200), z.string().max(10_000))
    .refine((map) => Object.keys(map).length <= TEMPLATE_MAP_MAX_ENTRIES, {
      message: `at most ${TEMPLATE_MAP_MAX_ENTRIES} entries`,
    })
    .describe(`${what}, at most ${TEMPLATE_MAP_MAX_ENTRIES} entries; each value is a LiquidJS template.`);

export const MobilePushTemplate = z
  .strictObject({
    type: z.literal("MobilePush"),
    title: liquid("Notification title"),
    body: liquid("Notification body"),
    imageUrl: liquid("URL of an image shown with the notification").optional(),
    data: LiquidMap("Extra key/value data delivered to the app").optional(),
  })
  .openapi("MobilePushTemplate");
export type MobilePushTemplate = z.infer<typeof MobilePushTemplate>;

export const EmailTemplate = z
  .strictObject({
    type: z.literal("Email"),
    from: liquid("Sender, e.g. `Acme <hello@acme.test>`", 1_000),
    subject: liquid("Subject line", 2_000),
    body: liquid("HTML body", 500_000),
    replyTo: liquid("Reply-To address", 1_000).optional(),
    cc: liquid("Cc addresses, comma-separated", 2_000).optional(),
    bcc: liquid("Bcc addresses, comma-separated", 2_000).optional(),
    headers: LiquidMap("Extra email headers by name").optional(),
  })
  .openapi("EmailTemplate");
export type EmailTemplate = z.infer<typeof EmailTemplate>;

export const SmsTemplate = z.strictObject({ type: z.literal("Sms"), body: liquid("Message text", 2_000) }).openapi("SmsTemplate");
export type SmsTemplate = z.infer<typeof SmsTemplate>;

export const WebhookTemplate = z
  .strictObject({
    type: z.literal("Webhook"),
    url: liquid("Target URL", 2_000),
    method: z.enum(["GET", "POST", "PUT", "PATCH", "DELETE"]).describe("HTTP method."),
    headers: LiquidMap("Extra request headers by name").optional(),
    body: liquid("Request body, usually JSON text", 100_000).optional(),
  })
  .openapi("WebhookTemplate");
export type WebhookTemplate = z.infer<typeof WebhookTemplate>;

export const MessageTemplateDefinition = z
  .discriminatedUnion("type", [MobilePushTemplate, EmailTemplate, SmsTemplate, WebhookTemplate])
  .describe(
    "A message for one channel, chosen by `type`. Every string field except `type` and `method` is a LiquidJS template, rendered off the server's event loop within one budget per message for all its fields together (TIDINGS_RENDER_TIME_LIMIT_MS, default 250 ms, and about 10 million characters or list items allocated): a message that runs out fails with the reason (a preview answers 400). Its scope: `user` — the user's traits as `user.<trait>` (`user.email`, `user.plan`, nested with dots: `user.address.city`) plus `user.id`, the user's id (there is no `user.userId`: it renders as nothing); `event` — the track event that triggered the message (`event.event`, `event.properties.<name>`, `event.userId`, `event.timestamp`, …): in a journey started by an `EventEntryNode`, the entry event, in every message of the run; absent for broadcasts and segment-entry journeys; `workspace` — `{id, name}`; `unsubscribe_url` — the signed one-click unsubscribe link (bound to the message's subscription group, if any). A variable that resolves to nothing renders as an empty string: the render endpoint lists them in `unresolved`.",
  )
  .openapi("MessageTemplateDefinition");
export type MessageTemplateDefinition = z.infer<typeof MessageTemplateDefinition>;

export const TemplateWarning = z.object({
  path: z.string().describe("The field, e.g. `definition.url`."),
  message: z.string(),
});
export type TemplateWarning = z.infer<typeof TemplateWarning>;

export const MessageTemplateResource = z
  .object({
    id: z.uuid(),
    workspaceId: WorkspaceId,
    name: z.string(),
    type: Channel.describe("Channel of `definition`, else of `draft`; `Email` when the template has neither."),
    updatedAt: EpochMillis.describe("Last change of any field (ms since epoch)."),
    createdAt: EpochMillis.optional(),
    category: MessageCategory.optional().describe(
      "The category of its messages (delivery policies), unless the broadcast or node sets one.",
    ),
    definition: MessageTemplateDefinition.optional().describe("What sends use. Absent until set."),
    draft: MessageTemplateDefinition.optional().describe("Work in progress, never sent. Absent until set."),
    warnings: z
      .array(TemplateWarning)
      .optional()
      .describe(
        "Answered by PUT only, when something saved may not work as is: a webhook `url` the send-time guard refuses (an address, or a host name resolving to one, that is loopback, private, link-local, … and not in TIDINGS_WEBHOOK_ALLOWED_HOSTS), or whose host name did not resolve within a second (so it could not be checked). A host written with Liquid is checked only when rendered, at send.",
      ),
  })
  .openapi("MessageTemplate");
export type MessageTemplateResource = z.infer<typeof MessageTemplateResource>;

export const UpsertMessageTemplateRequestBody = z
  .strictObject({
    id: z
      .uuid()
      .optional()
      .describe("Upsert key. When given, the template with this id is updated, or created with this id; else `name` is the key."),
    workspaceId: RequestWorkspaceId,
    name: resourceName("Unique within the workspace; renaming onto another template's name is a 409."),
    category: MessageCategory.nullable()
      .optional()
      .describe("The category of its messages (delivery policies). Omitted: the stored one is kept. `null`: removes it."),
    definition: MessageTemplateDefinition.nullable()
      .optional()
      .describe("Omitted: the stored definition is kept. `null`: removes it. Liquid syntax errors are a 400 naming the field."),
    draft: MessageTemplateDefinition.nullable().optional().describe("Omitted: the stored draft is kept. `null`: removes it."),
    type: ServerManaged,
    ...serverManagedFields,
  })
  .describe("Creates or updates a message template.");
export type UpsertMessageTemplateRequestBody = z.infer<typeof UpsertMessageTemplateRequestBody>;

export const MessageTemplateParams = idParams("Template");
export const MessageTemplateQuery = WorkspaceQuery;

export const MessageTemplateListQuery = ListQuery;
export type MessageTemplateListQuery = z.infer<typeof MessageTemplateListQuery>;

export const MessageTemplateListResponse = listResponse("templates", MessageTemplateResource);
export type MessageTemplateListResponse = z.infer<typeof MessageTemplateListResponse>;

export const RenderTemplateRequestBody = z
  .strictObject({
    workspaceId: RequestWorkspaceId,
    templateId: z.uuid().optional().describe("A stored template to render. Give this or `definition`."),
    source: z
      .enum(["definition", "draft"])
      .default("definition")
      .describe("With `templateId`: render the template's `definition` (default) or its `draft`."),
    definition: MessageTemplateDefinition.optional().describe("An inline definition to render. Give this or `templateId`."),
    userId: z
      .string()
      .min(1)
      .max(255)
      .optional()
      .describe("A known user (or a linked anonymousId) whose profile fills `user`. Give this or `user`."),
    user: z
      .looseObject({ id: z.string().min(1).max(255).describe("The user's id.") })
      .optional()
      .describe("An inline user: traits plus `id`, exposed as `user`. Give this or `userId`."),
    event: JsonObject.optional().describe("Exposed as `event`, as if a journey step were triggered by this event."),
    subscriptionGroupId: z
      .uuid()
      .optional()
      .describe("Subscription group the `unsubscribe_url` link is bound to; without it the link names no group."),
  })
  .superRefine((body, ctx) => {
    const exactlyOne = (a: keyof typeof body, b: keyof typeof body) => {
      const count = Number(body[a] !== undefined) + Number(body[b] !== undefined);
      if (count !== 1) {
        ctx.addIssue({ code: "custom", path: [count ? b : a], message: `give exactly one of \`${a}\` and \`${b}\`` });
      }
    };
    exactlyOne("templateId", "definition");
    exactlyOne("userId", "user");
  })
  .describe("Renders a stored or inline template for a user, without sending anything.");
export type RenderTemplateRequestBody = z.infer<typeof RenderTemplateRequestBody>;

export const RenderedFields = z
  .record(z.string(), z.union([z.string(), z.record(z.string(), z.string())]))
  .describe(
    "The definition's fields (all but `type`), rendered; map fields (`data`, `headers`) stay maps of rendered values. Webhook `method` is copied as is.",
  );
export type RenderedFields = z.infer<typeof RenderedFields>;

export const UnresolvedVariable = z.object({
  path: z.string().describe("The field, e.g. `definition.body`."),
  variable: z.string().describe("The variable as written, e.g. `user.userId`."),
});
export type UnresolvedVariable = z.infer<typeof UnresolvedVariable>;

export const RenderTemplateResponse = z.object({
  type: Channel.describe("Channel of the rendered definition."),
  rendered: RenderedFields,
  unresolved: z
    .array(UnresolvedVariable)
    .optional()
    .describe(
      "Variables that resolved to nothing (undefined or null) for this user, each with its field: they rendered as an empty string. Absent when there are none. `{{ user.userId }}` is one (the id is `user.id`); a variable behind a `default` filter or inside an `{% if %}` is listed too.",
    ),
});
export type RenderTemplateResponse = z.infer<typeof RenderTemplateResponse>;
