// Channel providers.
import {
  ChannelProviderListQuery,
  ChannelProviderListResponse,
  ChannelProviderParams,
  ChannelProviderQuery,
  ChannelProviderResource,
  UpsertChannelProviderRequestBody,
} from "../providers.js";
import { adminErrors, adminSecurity, json, registry } from "./registry.js";

const PATH = "/api/admin/providers";
const tags = ["Channel providers"];

export function registerProvidersPaths() {
  registry.registerPath({
    method: "put",
    path: PATH,
    tags,
    summary: "Set the provider of a channel",
    description: [
      "A workspace has one provider per channel. Upserts by `id` when given (an id not yet in the workspace creates the provider with that id; 409 if another provider already serves the channel), else by (`workspaceId`, `channel`).",
      "Types per channel: Email `Smtp`; Sms `Twilio`; MobilePush `Fcm` or `Expo`; Webhook `Webhook`; any channel `Log` (records the rendered message without sending). Another combination is a 400 naming `type`; `config` is validated for the type.",
      "Secret fields (`password`, `authToken`, `serviceAccountJson`, `accessToken`, `signingSecret`) are stored encrypted (AES-256-GCM under a key derived from TIDINGS_SECRET_KEY) and returned masked: `••••` plus the last 4 characters when the secret has at least 16, else `••••`. `config` is replaced as a whole, except that a secret omitted — or sent back in its masked form — keeps its stored value while the type stays the same; `null` removes it.",
    ].join("\n\n"),
    security: adminSecurity,
    request: { body: json(UpsertChannelProviderRequestBody) },
    responses: { 200: { description: "The stored provider, secrets masked.", ...json(ChannelProviderResource) }, ...adminErrors("CONFLICT") },
  });

  registry.registerPath({
    method: "get",
    path: PATH,
    tags,
    summary: "List channel providers, ordered by channel then id",
    security: adminSecurity,
    request: { query: ChannelProviderListQuery },
    responses: { 200: { description: "A page of providers.", ...json(ChannelProviderListResponse) }, ...adminErrors() },
  });

  registry.registerPath({
    method: "get",
    path: `${PATH}/{id}`,
    tags,
    summary: "Get a channel provider",
    security: adminSecurity,
    request: { params: ChannelProviderParams, query: ChannelProviderQuery },
    responses: { 200: { description: "The provider, secrets masked.", ...json(ChannelProviderResource) }, ...adminErrors("NOT_FOUND") },
  });

  registry.registerPath({
    method: "delete",
    path: `${PATH}/{id}`,
    tags,
    summary: "Delete a channel provider",
    security: adminSecurity,
    request: { params: ChannelProviderParams, query: ChannelProviderQuery },
    responses: { 204: { description: "Deleted." }, ...adminErrors("NOT_FOUND") },
  });
}
