// Channel providers: one per channel and workspace.
import {
  ChannelProviderListQuery,
  ChannelProviderListResponse,
  ChannelProviderParams,
  ChannelProviderQuery,
  ChannelProviderResource,
  UpsertChannelProviderRequestBody,
} from "../providers.js";
import { adminErrors, defineContract } from "./contract.js";

const PATH = "/api/admin/providers";
const tags = ["Channel providers"] as const;

export const providerContracts = [
  defineContract({
    operationId: "providers.upsert",
    method: "PUT",
    path: PATH,
    auth: "admin",
    tags,
    summary: "Set the provider of a channel",
    description: [
      "A workspace has one provider per channel. Upserts by `id` when given (an id not yet in the workspace creates the provider with that id; 409 if another provider already serves the channel), else by (`workspaceId`, `channel`).",
      "Types per channel: Email `Smtp`; Sms `Twilio`; MobilePush `Fcm` or `Expo`; Webhook `Webhook`; any channel `Log` (records the rendered message without sending). Another combination is a 400 naming `type`; `config` is validated for the type.",
      "Secret fields (`password`, `authToken`, `serviceAccountJson`, `accessToken`, `signingSecret`) are stored encrypted (AES-256-GCM under a key derived from TIDINGS_SECRET_KEY) and returned masked: `••••` plus the last 4 characters when the secret has at least 16, else `••••`. `config` is replaced as a whole, except that a secret omitted — or sent back in its masked form — keeps its stored value while the type stays the same; `null` removes it.",
    ].join("\n\n"),
    body: UpsertChannelProviderRequestBody,
    success: { status: 200, description: "The stored provider, secrets masked.", schema: ChannelProviderResource },
    errors: adminErrors("CONFLICT"),
  }),
  defineContract({
    operationId: "providers.list",
    method: "GET",
    path: PATH,
    auth: "admin",
    tags,
    summary: "List channel providers, ordered by channel then id",
    query: ChannelProviderListQuery,
    success: { status: 200, description: "A page of providers.", schema: ChannelProviderListResponse },
    errors: adminErrors(),
  }),
  defineContract({
    operationId: "providers.get",
    method: "GET",
    path: `${PATH}/{id}`,
    auth: "admin",
    tags,
    summary: "Get a channel provider",
    params: ChannelProviderParams,
    query: ChannelProviderQuery,
    success: { status: 200, description: "The provider, secrets masked.", schema: ChannelProviderResource },
    errors: adminErrors("NOT_FOUND"),
  }),
  defineContract({
    operationId: "providers.delete",
    method: "DELETE",
    path: `${PATH}/{id}`,
    auth: "admin",
    tags,
    summary: "Delete a channel provider",
    params: ChannelProviderParams,
    query: ChannelProviderQuery,
    success: { status: 204, description: "Deleted." },
    errors: adminErrors("NOT_FOUND"),
  }),
] as const;
