// Channel providers: one per (workspace, channel). Secret config fields live encrypted in the
// `secrets` column, sealed with the row's workspace and id as context.
import { randomUUID } from "node:crypto";
import {
  type Channel,
  type ChannelProviderListQuery,
  type ChannelProviderListResponse,
  type ChannelProviderResource,
  type ProviderConfig,
  providerConfigSchemas,
  type ProviderType,
  type UpsertChannelProviderRequestBody,
} from "@tidings/schema";
import { z } from "zod";
import type { PrismaClient } from "../../db/client.ts";
import { sql } from "../../db/sql.ts";
import { sameJson, type Tx, type Upserted, upsert } from "../../db/upsert.ts";
import type { ChannelProvider, Prisma } from "../../generated/prisma/client.ts";
import { ApiError, badRequest, notFound, zodIssues } from "../../lib/errors.ts";
import { decodeCursor, invalidCursor, page } from "../../http/pagination.ts";
import { type SecretBox, SecretDecryptionError } from "../../lib/secrets.ts";
import type { OutboundGuard } from "../../outbound/index.ts";
import { destinationWarnings } from "./destinations.ts";
import { endpointIssues, maskedConfig, mergePlain, mergeSecrets, type Secrets } from "./config.ts";

const secretsContext = (workspaceId: string, id: string) => `channel_providers/${workspaceId}/${id}`;

function openSecrets(box: SecretBox, row: ChannelProvider): Secrets {
  if (!row.secrets) return {};
  return JSON.parse(box.open(row.secrets, secretsContext(row.workspaceId, row.id))) as Secrets;
}

/** The row's secrets, or null when they cannot be decrypted (sealed under a key we no longer have). */
function readableSecrets(box: SecretBox, row: ChannelProvider): Secrets | null {
  try {
    return openSecrets(box, row);
  } catch (err) {
    if (err instanceof SecretDecryptionError) return null;
    throw err;
  }
}

/** How many providers have sealed secrets, and how many of them `box` opens. */
export async function sealedProviderSecrets(tx: Prisma.TransactionClient, box: SecretBox) {
  const rows = await tx.channelProvider.findMany({ where: { secrets: { not: null } } });
  return { total: rows.length, opened: rows.filter((row) => readableSecrets(box, row) !== null).length };
}

/** Re-encrypts every provider's secrets from one key to another (rows `from` cannot open are left as they are). */
export async function resealProviderSecrets(tx: Prisma.TransactionClient, from: SecretBox, to: SecretBox) {
  const rows = await tx.channelProvider.findMany({ where: { secrets: { not: null } } });
  let resealed = 0;
  for (const row of rows) {
    const secrets = readableSecrets(from, row);
    if (!secrets) continue;
    const sealed = to.seal(JSON.stringify(secrets), secretsContext(row.workspaceId, row.id));
    await tx.channelProvider.update({ where: { workspaceId_id: { workspaceId: row.workspaceId, id: row.id } }, data: { secrets: sealed } });
    resealed++;
  }
  return { resealed, unreadable: rows.length - resealed };
}

export function toProviderResource(box: SecretBox, row: ChannelProvider): ChannelProviderResource {
  const type = row.type as ProviderType;
  const secrets = readableSecrets(box, row);
  return {
    id: row.id,
    workspaceId: row.workspaceId,
    channel: row.channel,
    type,
    config: maskedConfig(type, row.config as Record<string, unknown>, secrets ?? {}),
    ...(secrets ? {} : { secretsUnreadable: true }),
    createdAt: row.createdAt.getTime(),
    updatedAt: row.updatedAt.getTime(),
  } as ChannelProviderResource;
}

/** A provider's fields after a PUT: its config split into plain fields and (decrypted) secrets. */
interface ProviderFields {
  channel: Channel;
  type: ProviderType;
  plain: Record<string, unknown>;
  secrets: Secrets;
}

/**
 * The provider's fields after the PUT: stored fields carry over only while the type stays the
 * same; unreadable secrets never do; a secret does not follow a changed destination.
 */
function mergedFields(box: SecretBox, body: UpsertChannelProviderRequestBody, existing: ChannelProvider | null): ProviderFields {
  const requested = body.config as Record<string, unknown>;
  const sameType = existing !== null && existing.type === body.type;
  const stored = sameType ? (readableSecrets(box, existing) ?? {}) : {};
  const storedPlain = sameType ? (existing.config as Record<string, unknown>) : {};
  const { secrets, issues } = mergeSecrets(body.type, requested, stored);
  if (issues.length) throw badRequest("Invalid provider config", issues);
  const plain = mergePlain(body.type, requested, storedPlain);
  const moved = endpointIssues(body.type, requested, { plain: storedPlain, secrets: stored }, plain);
  if (moved.length) throw badRequest("A stored secret does not follow a changed destination", moved);
  const complete = providerConfigSchemas[body.type].safeParse({ ...plain, ...secrets });
  if (!complete.success) throw badRequest("Invalid provider config", zodIssues(complete.error, ["config"]));
  return { channel: body.channel, type: body.type, plain, secrets };
}

/**
 * PUT semantics (src/db/upsert.ts), in the caller's transaction: keyed by `id` when given, else
 * by channel (one provider per channel; moving a provider onto a channel that has one is a 409).
 * While the type stays the same, config fields left out keep their stored value (config.ts);
 * nothing changed (secrets compared decrypted), nothing written. The value is the stored row
 * (`toProviderResource`, `withDestinationWarnings`).
 */
export async function upsertProvider(
  tx: Tx,
  box: SecretBox,
  workspaceId: string,
  body: UpsertChannelProviderRequestBody,
): Promise<Upserted<ChannelProvider>> {
  const merged = (existing: ChannelProvider | null) => mergedFields(box, body, existing);
  const columns = (fields: ProviderFields, id: string) => ({
    channel: fields.channel,
    type: fields.type,
    config: fields.plain as Prisma.InputJsonValue,
    secrets: Object.keys(fields.secrets).length ? box.seal(JSON.stringify(fields.secrets), secretsContext(workspaceId, id)) : null,
  });
  const newId = body.id ?? randomUUID();

  return upsert<ChannelProvider, ProviderFields, ProviderFields>(tx, {
    table: "channel_providers",
    workspaceId,
    id: body.id,
    key: sql`channel = ${body.channel}::"Channel"`,
    read: (tx, id) => tx.channelProvider.findUnique({ where: { workspaceId_id: { workspaceId, id } } }),
    toCreate: () => merged(null),
    changes: (existing) => {
      const next = merged(existing);
      const storedSecrets = readableSecrets(box, existing);
      const same =
        existing.channel === next.channel &&
        existing.type === next.type &&
        sameJson(existing.config, next.plain) &&
        storedSecrets !== null &&
        sameJson(storedSecrets, next.secrets);
      return same ? null : next;
    },
    insert: (tx, fields, now) =>
      tx.channelProvider.create({ data: { workspaceId, id: newId, ...columns(fields, newId), createdAt: now, updatedAt: now } }),
    update: (tx, existing, fields, now) =>
      tx.channelProvider.update({
        where: { workspaceId_id: { workspaceId, id: existing.id } },
        data: { ...columns(fields, existing.id), updatedAt: now },
      }),
    keyTaken: () =>
      new ApiError("CONFLICT", `The workspace already has a ${body.channel} provider; update it (by its id or channel) instead`),
  });
}

/** The stored provider as the PUT answers it: with a warning for each destination the outbound guard would refuse. */
export async function withDestinationWarnings(
  box: SecretBox,
  row: ChannelProvider,
  guard: OutboundGuard,
): Promise<ChannelProviderResource> {
  const resource = toProviderResource(box, row);
  const config = { ...(row.config as Record<string, unknown>), ...(readableSecrets(box, row) ?? {}) };
  const warnings = await destinationWarnings(row.type as ProviderType, config, guard);
  return warnings.length ? { ...resource, warnings } : resource;
}

/** The Channel enum in its declaration order, which is how PostgreSQL sorts it. */
const CHANNEL_ORDER: Channel[] = ["Email", "Sms", "MobilePush", "Webhook"];
const ChannelCursor = z.tuple([z.enum(CHANNEL_ORDER), z.uuid()]);

export async function listProviders(
  prisma: PrismaClient,
  box: SecretBox,
  workspaceId: string,
  query: ChannelProviderListQuery,
): Promise<ChannelProviderListResponse> {
  const where: Prisma.ChannelProviderWhereInput = { workspaceId };
  if (query.cursor) {
    const parsed = ChannelCursor.safeParse(decodeCursor(query.cursor, ["string", "string"]));
    if (!parsed.success) throw invalidCursor();
    const [channel, id] = parsed.data;
    const later = CHANNEL_ORDER.slice(CHANNEL_ORDER.indexOf(channel) + 1);
    where.OR = [{ channel: { in: later } }, { channel, id: { gt: id } }];
  }
  // Ordered by channel (the enum's declaration order), then id.
  const rows = await prisma.channelProvider.findMany({ where, orderBy: [{ channel: "asc" }, { id: "asc" }], take: query.limit + 1 });
  const result = page(
    rows,
    query.limit,
    (r) => toProviderResource(box, r),
    (r) => [r.channel, r.id],
  );
  return { ...result, providers: result.items };
}

async function findProvider(prisma: PrismaClient, workspaceId: string, id: string): Promise<ChannelProvider> {
  const row = await prisma.channelProvider.findUnique({ where: { workspaceId_id: { workspaceId, id } } });
  if (!row) throw notFound(`Provider ${id}`);
  return row;
}

export async function getProvider(prisma: PrismaClient, box: SecretBox, workspaceId: string, id: string) {
  return toProviderResource(box, await findProvider(prisma, workspaceId, id));
}

export async function deleteProvider(prisma: PrismaClient, workspaceId: string, id: string): Promise<void> {
  const { count } = await prisma.channelProvider.deleteMany({ where: { workspaceId, id } });
  if (count === 0) throw notFound(`Provider ${id}`);
}

export type ProviderForSending = { [T in ProviderType]: { id: string; type: T; config: ProviderConfig[T] } }[ProviderType];

/** The channel's provider is set but cannot send; the message says why, for the deliveries' failure reason. */
export class ProviderUnusableError extends Error {
  override name = "ProviderUnusableError";
}

/**
 * What a sender needs: the channel's provider with its secrets decrypted; null when none is set.
 * Throws ProviderUnusableError when its secrets do not decrypt (sealed under another
 * TIDINGS_SECRET_KEY) or its stored config is not a valid one.
 */
export async function providerForSending(
  prisma: PrismaClient,
  box: SecretBox,
  workspaceId: string,
  channel: Channel,
): Promise<ProviderForSending | null> {
  const row = await prisma.channelProvider.findUnique({ where: { workspaceId_channel: { workspaceId, channel } } });
  if (!row) return null;
  const secrets = readableSecrets(box, row);
  if (!secrets) {
    throw new ProviderUnusableError(
      `the ${channel} provider's secrets cannot be decrypted with the current TIDINGS_SECRET_KEY (sealed under another key, or altered); ` +
        "save the provider again with its secrets (PUT /api/admin/providers)",
    );
  }
  const type = row.type as ProviderType;
  const parsed = providerConfigSchemas[type].safeParse({ ...(row.config as object), ...secrets });
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${["config", ...i.path.map(String)].join(".")}: ${i.message}`).join("; ");
    throw new ProviderUnusableError(`the ${channel} provider's stored ${type} config is invalid: ${issues}`);
  }
  return { id: row.id, type, config: parsed.data } as ProviderForSending;
}
