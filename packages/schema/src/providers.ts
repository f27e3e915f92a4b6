// Channel providers: which service delivers a workspace's messages on each channel, with its
// settings. Secret settings are write-only: stored encrypted, returned masked.
import { z } from "./zod.js";
import {
  EpochMillis,
  idParams,
  ListQuery,
  listResponse,
  RequestWorkspaceId,
  serverManagedFields,
  WorkspaceId,
  WorkspaceQuery,
} from "./common.js";
import { Channel } from "./subscription-groups.js";
import { TemplateWarning } from "./templates.js";

export const ProviderType = z
  .enum(["Smtp", "Twilio", "Fcm", "Expo", "Webhook", "Log"])
  .describe("Delivery service. `Log` records the rendered message without sending and fits every channel.");
export type ProviderType = z.infer<typeof ProviderType>;

/** The provider types each channel accepts. */
export const providerTypesByChannel: Record<Channel, readonly ProviderType[]> = {
  Email: ["Smtp", "Log"],
  Sms: ["Twilio", "Log"],
  MobilePush: ["Fcm", "Expo", "Log"],
  Webhook: ["Webhook", "Log"],
};

/** Config fields of each type that are secrets: stored encrypted, never returned in full. */
export const providerSecretFields = {
  Smtp: ["password"],
  Twilio: ["authToken"],
  Fcm: ["serviceAccountJson"],
  Expo: ["accessToken"],
  Webhook: ["signingSecret"],
  Log: [],
} as const satisfies Record<ProviderType, readonly string[]>;

/**
 * Config fields of each type that say where its secrets are sent: a stored secret is bound to them,
 * so changing one without sending the secrets again is refused (a secret never follows a new
 * destination). FCM's token endpoint is the service account's own `token_uri`, inside the secret.
 */
export const providerEndpointFields = {
  Smtp: ["host", "port"],
  Twilio: ["baseUrl", "accountSid"],
  Fcm: ["baseUrl", "projectId"],
  Expo: ["baseUrl"],
  Webhook: [],
  Log: [],
} as const satisfies Record<ProviderType, readonly string[]>;

export const SECRET_MASK_PREFIX = "••••";

const SECRET_NOTE =
  "Secret: stored encrypted and returned masked — `••••` followed by the last 4 characters when the secret has at least 16, else `••••` alone. On update, omit it (or send the masked value back) to keep the stored one; `null` removes it. A stored secret is bound to where it is sent (`host` and `port`, `baseUrl`, `accountSid`, `projectId`): an update changing one of those must send the secret again, else it is a 400 naming the field.";
const secret = (what: string) => z.string().min(1).max(20_000).describe(`${what}. ${SECRET_NOTE}`);
/**
 * The config of an update: every field may be left out (it keeps its stored value while the type
 * stays the same) and an optional one may be `null` (removes it); completeness is checked once
 * the stored values are merged in, so a new provider still needs its required fields.
 */
const configInput = <S extends Record<string, z.ZodType>>(shape: S) =>
  z.strictObject(
    Object.fromEntries(Object.entries(shape).map(([k, s]) => [k, s.nullable().optional()])) as {
      [K in keyof S]: z.ZodOptional<z.ZodNullable<S[K]>>;
    },
  );
const masked = (what: string) => z.string().optional().describe(`${what}, masked (present only when set).`);
const baseUrl = z.url({ protocol: /^https?$/ }).optional();

const smtp = {
  host: z.string().min(1).max(255).describe("SMTP server host."),
  port: z.number().int().min(1).max(65_535).describe("SMTP server port (587 for STARTTLS, 465 for TLS)."),
  secure: z.boolean().optional().describe("Connect with TLS from the start (port 465); else STARTTLS when offered."),
  username: z.string().max(500).optional().describe("Login user."),
  from: z.string().max(500).optional().describe("Default sender when a template's `from` renders empty."),
};
const twilio = {
  accountSid: z.string().min(1).max(100).describe("Twilio account SID."),
  fromNumber: z.string().max(50).optional().describe("Sender phone number (E.164). Give this or `messagingServiceSid`."),
  messagingServiceSid: z.string().max(100).optional().describe("Twilio messaging service SID."),
  baseUrl: baseUrl.describe("API base URL; defaults to https://api.twilio.com (override for tests or proxies)."),
};
const fcm = {
  projectId: z.string().min(1).max(200).describe("Firebase project id."),
  baseUrl: baseUrl.describe(
    "FCM HTTP v1 API base URL; defaults to https://fcm.googleapis.com (override for tests or proxies). The OAuth token endpoint is the service account's own `token_uri`.",
  ),
};
const expo = { baseUrl: baseUrl.describe("Push API base URL; defaults to https://exp.host.") };

const isJsonObjectText = (text: string) => {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === "object" && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
};
/** In a request the masked value may be sent back (it means "keep"); stored, it must be JSON. */
const serviceAccountJson = (allowMasked: boolean) =>
  secret("Contents of the Firebase service account key file (JSON text)").refine(
    (text) => (allowMasked && text.startsWith(SECRET_MASK_PREFIX)) || isJsonObjectText(text),
    "must be the JSON text of a service account key file",
  );

/** `whsec_` followed by standard base64 (padded) of at least one byte. */
const isStandardWebhooksSecret = (text: string) => {
  const b64 = text.slice("whsec_".length);
  return b64.length > 0 && b64.length % 4 === 0 && /^[A-Za-z0-9+/]+={0,2}$/.test(b64);
};
const WEBHOOK_SECRET =
  "Key signing each request per the Standard Webhooks spec: headers `webhook-id` (the delivery id, the receiver's idempotency key), `webhook-timestamp` (Unix seconds) and `webhook-signature` = `v1,` + base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`. " +
  "`whsec_<base64>` (the Standard Webhooks form; 24 to 64 random bytes are recommended) means the base64-decoded bytes, so a receiver passes it unchanged to a Standard Webhooks library; " +
  "any other string is used as its own UTF-8 bytes (with the `standardwebhooks` library, verify with `whsec_` + base64 of that string). " +
  "Without a secret, requests carry `webhook-id` and `webhook-timestamp` but no signature";
/** In a request the masked value may be sent back (it means "keep"). */
const webhookSigningSecret = (allowMasked: boolean) =>
  secret(WEBHOOK_SECRET).refine(
    (text) => (allowMasked && text.startsWith(SECRET_MASK_PREFIX)) || !text.startsWith("whsec_") || isStandardWebhooksSecret(text),
    "a secret starting with `whsec_` must continue with padded base64 (the Standard Webhooks form)",
  );

const needsSender = (c: { fromNumber?: string | undefined; messagingServiceSid?: string | undefined }, ctx: z.RefinementCtx) => {
  if (!c.fromNumber && !c.messagingServiceSid) {
    ctx.addIssue({ code: "custom", path: ["fromNumber"], message: "give `fromNumber` or `messagingServiceSid`" });
  }
};

// Complete configs: what a provider holds once stored secrets are merged in (what senders use).
export const SmtpConfig = z.strictObject({ ...smtp, password: secret("Login password").optional() });
export const TwilioConfig = z.strictObject({ ...twilio, authToken: secret("Twilio auth token") }).superRefine(needsSender);
export const FcmConfig = z.strictObject({ ...fcm, serviceAccountJson: serviceAccountJson(false) });
export const ExpoConfig = z.strictObject({ ...expo, accessToken: secret("Expo access token (enhanced push security)").optional() });
export const WebhookConfig = z.strictObject({ signingSecret: webhookSigningSecret(false).optional() });
export const LogConfig = z.strictObject({});
export type SmtpConfig = z.infer<typeof SmtpConfig>;
export type TwilioConfig = z.infer<typeof TwilioConfig>;
export type FcmConfig = z.infer<typeof FcmConfig>;
export type ExpoConfig = z.infer<typeof ExpoConfig>;
export type WebhookConfig = z.infer<typeof WebhookConfig>;
export type LogConfig = z.infer<typeof LogConfig>;

/** Complete config schema of each type. */
export const providerConfigSchemas = {
  Smtp: SmtpConfig,
  Twilio: TwilioConfig,
  Fcm: FcmConfig,
  Expo: ExpoConfig,
  Webhook: WebhookConfig,
  Log: LogConfig,
} satisfies Record<ProviderType, z.ZodType>;
export type ProviderConfig = { [T in ProviderType]: z.infer<(typeof providerConfigSchemas)[T]> };

const upsertBase = {
  id: z.uuid().optional().describe("When given, the provider with this id is updated, or created with this id; else `channel` is the key."),
  workspaceId: RequestWorkspaceId,
  channel: Channel.describe("Channel served; a workspace has one provider per channel."),
  ...serverManagedFields,
};

export const UpsertChannelProviderRequestBody = z
  .discriminatedUnion("type", [
    z.strictObject({
      ...upsertBase,
      type: z.literal("Smtp"),
      config: configInput({ ...smtp, password: secret("Login password") }),
    }),
    z.strictObject({
      ...upsertBase,
      type: z.literal("Twilio"),
      config: configInput({ ...twilio, authToken: secret("Twilio auth token") }),
    }),
    z.strictObject({
      ...upsertBase,
      type: z.literal("Fcm"),
      config: configInput({ ...fcm, serviceAccountJson: serviceAccountJson(true) }),
    }),
    z.strictObject({
      ...upsertBase,
      type: z.literal("Expo"),
      config: configInput({ ...expo, accessToken: secret("Expo access token") }),
    }),
    z.strictObject({
      ...upsertBase,
      type: z.literal("Webhook"),
      config: configInput({ signingSecret: webhookSigningSecret(true) }),
    }),
    z.strictObject({ ...upsertBase, type: z.literal("Log"), config: LogConfig.default({}) }),
  ])
  .superRefine((body, ctx) => {
    const allowed = providerTypesByChannel[body.channel];
    if (!allowed.includes(body.type)) {
      ctx.addIssue({
        code: "custom",
        path: ["type"],
        message: `the ${body.channel} channel takes a provider of type ${allowed.map((t) => `\`${t}\``).join(" or ")}`,
      });
    }
  })
  .describe(
    "Creates or updates the workspace's provider of a channel. While the type stays the same, `config` fields left out keep their stored value (secrets also when sent back masked) and `null` removes an optional field; a new provider, or one whose type changes, needs every required field of its type. A stored secret never follows a new destination: changing `host` or `port` (Smtp), `baseUrl` or `accountSid` (Twilio), `baseUrl` or `projectId` (Fcm), `baseUrl` (Expo) without sending the secret again is a 400 naming the field. Every destination (SMTP host and port, base URLs, the FCM key file's `token_uri`) passes the outbound guard: one it would refuse (a loopback, private, link-local… address, or an SMTP port other than 25, 465, 587 and 2525, unless the operator allow-lists the host) is saved with a warning, and sends to it fail.",
  );
export type UpsertChannelProviderRequestBody = z.infer<typeof UpsertChannelProviderRequestBody>;

const resourceBase = {
  id: z.uuid(),
  workspaceId: WorkspaceId,
  channel: Channel,
  createdAt: EpochMillis,
  updatedAt: EpochMillis.describe("Last change of any field (ms since epoch)."),
  secretsUnreadable: z
    .literal(true)
    .optional()
    .describe(
      "Present when the stored secrets cannot be decrypted with the server's TIDINGS_SECRET_KEY: their fields are left out of `config`; send new values with PUT.",
    ),
  warnings: z
    .array(TemplateWarning)
    .optional()
    .describe(
      "Answered by PUT only, when a destination of the config would be refused by the outbound guard at send (an address, or a host name resolving to one, that is loopback, private, link-local…, or an SMTP port other than 25, 465, 587 and 2525, unless the operator allow-lists the host with TIDINGS_OUTBOUND_ALLOWED_HOSTS), or did not resolve within a second.",
    ),
};

export const ChannelProviderResource = z
  .discriminatedUnion("type", [
    z.object({ ...resourceBase, type: z.literal("Smtp"), config: z.object({ ...smtp, password: masked("Login password") }) }),
    z.object({ ...resourceBase, type: z.literal("Twilio"), config: z.object({ ...twilio, authToken: masked("Auth token") }) }),
    z.object({ ...resourceBase, type: z.literal("Fcm"), config: z.object({ ...fcm, serviceAccountJson: masked("Service account key") }) }),
    z.object({ ...resourceBase, type: z.literal("Expo"), config: z.object({ ...expo, accessToken: masked("Access token") }) }),
    z.object({ ...resourceBase, type: z.literal("Webhook"), config: z.object({ signingSecret: masked("Signing secret") }) }),
    z.object({ ...resourceBase, type: z.literal("Log"), config: z.object({}) }),
  ])
  .describe("A channel provider; secret config fields are masked.")
  .openapi("ChannelProvider");
export type ChannelProviderResource = z.infer<typeof ChannelProviderResource>;

export const ChannelProviderParams = idParams("Provider");
export const ChannelProviderQuery = WorkspaceQuery;

export const ChannelProviderListQuery = ListQuery;
export type ChannelProviderListQuery = z.infer<typeof ChannelProviderListQuery>;

export const ChannelProviderListResponse = listResponse("providers", ChannelProviderResource);
export type ChannelProviderListResponse = z.infer<typeof ChannelProviderListResponse>;
