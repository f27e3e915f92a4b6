// Message templates: upsert (Liquid syntax checked before anything is stored), list, get, delete.
import type {
  Channel,
  MessageTemplateDefinition,
  MessageTemplateListQuery,
  MessageTemplateListResponse,
  MessageTemplateResource,
  UpsertMessageTemplateRequestBody,
} from "@tidings/schema";
import type { PrismaClient } from "../db/client.ts";
import { assertNotHeld, deleteUnlessHeld } from "../db/references.ts";
import { sql } from "../db/sql.ts";
import { jsonColumn, sameJson, type Tx, type Upserted, upsert } from "../db/upsert.ts";
import type { MessageTemplate, Prisma } from "../generated/prisma/client.ts";
import { ApiError, badRequest, notFound } from "../lib/errors.ts";
import { afterNameAndId, page } from "../http/pagination.ts";
import type { RenderPool } from "./render-pool.ts";

export function toTemplateResource(row: MessageTemplate): MessageTemplateResource {
  const definition = row.definition as MessageTemplateDefinition | null;
  const draft = row.draft as MessageTemplateDefinition | null;
  const type: Channel = definition?.type ?? draft?.type ?? "Email";
  return {
    id: row.id,
    workspaceId: row.workspaceId,
    name: row.name,
    type,
    updatedAt: row.updatedAt.getTime(),
    createdAt: row.createdAt.getTime(),
    ...(row.category ? { category: row.category } : {}),
    ...(definition ? { definition } : {}),
    ...(draft ? { draft } : {}),
  };
}

interface TemplateFields {
  name: string;
  category: string | null;
  definition: MessageTemplateDefinition | null;
  draft: MessageTemplateDefinition | null;
}

/**
 * What a running journey cannot send any more after this change of its template: the reason, or
 * null when it still can. A journey starts only with templates that have a definition of the
 * node's channel (journeys/validate.ts), so losing the definition or changing its channel breaks it.
 */
function breaksSending(stored: MessageTemplateDefinition | null, next: MessageTemplateDefinition | null): string | null {
  if (!stored) return null;
  if (!next) return "its definition cannot be removed while they run";
  if (next.type !== stored.type) return `its channel cannot change from ${stored.type} to ${next.type} while they run`;
  return null;
}

/** 400 when the template's Liquid does not parse: checked before a PUT or an apply opens its transaction. */
export async function assertTemplateSyntax(
  liquid: Pick<RenderPool, "syntaxIssues">,
  body: UpsertMessageTemplateRequestBody,
): Promise<void> {
  const issues = (
    await Promise.all([
      body.definition ? liquid.syntaxIssues("definition", body.definition) : [],
      body.draft ? liquid.syntaxIssues("draft", body.draft) : [],
    ])
  ).flat();
  if (issues.length) throw badRequest("The template has Liquid syntax errors", issues);
}

/**
 * PUT semantics (src/db/upsert.ts), in the caller's transaction, after `assertTemplateSyntax`:
 * keyed by `id` when given, else by name; an omitted `definition` or `draft` keeps the stored
 * one, `null` removes it; nothing changed, nothing written. Removing the definition or changing
 * its channel is a 409 while a running journey uses the template.
 */
export async function upsertTemplate(
  tx: Tx,
  workspaceId: string,
  body: UpsertMessageTemplateRequestBody,
): Promise<Upserted<MessageTemplateResource>> {
  const done = await upsert<MessageTemplate, TemplateFields, Partial<TemplateFields>>(tx, {
    table: "message_templates",
    workspaceId,
    id: body.id,
    key: sql`name = ${body.name}`,
    read: (tx, id) => tx.messageTemplate.findUnique({ where: { workspaceId_id: { workspaceId, id } } }),
    toCreate: () => ({ name: body.name, category: body.category ?? null, definition: body.definition ?? null, draft: body.draft ?? null }),
    changes: (existing) => {
      const changes: Partial<TemplateFields> = {};
      if (body.name !== existing.name) changes.name = body.name;
      if (body.category !== undefined && body.category !== existing.category) changes.category = body.category;
      if (body.definition !== undefined && !sameJson(body.definition, existing.definition)) changes.definition = body.definition;
      if (body.draft !== undefined && !sameJson(body.draft, existing.draft)) changes.draft = body.draft;
      return Object.keys(changes).length > 0 ? changes : null;
    },
    validate: async (tx, write) => {
      if (write.existing === null || write.update.definition === undefined) return;
      const why = breaksSending(write.existing.definition as MessageTemplateDefinition | null, write.update.definition);
      if (why) {
        const what = `Template ${JSON.stringify(write.existing.name)}`;
        await assertNotHeld(tx, workspaceId, { kind: "MessageTemplate", id: write.existing.id }, what, { kinds: ["Journey"], why });
      }
    },
    insert: (tx, fields, now) =>
      tx.messageTemplate.create({
        data: {
          workspaceId,
          ...(body.id ? { id: body.id } : {}),
          name: fields.name,
          category: fields.category,
          definition: jsonColumn(fields.definition),
          draft: jsonColumn(fields.draft),
          createdAt: now,
          updatedAt: now,
        },
      }),
    update: (tx, existing, changes, now) =>
      tx.messageTemplate.update({
        where: { workspaceId_id: { workspaceId, id: existing.id } },
        data: {
          // A field left undefined is not written (Prisma), nor is a JSON column (jsonColumn).
          name: changes.name,
          category: changes.category,
          definition: jsonColumn(changes.definition),
          draft: jsonColumn(changes.draft),
          updatedAt: now,
        },
      }),
    keyTaken: () => new ApiError("CONFLICT", `Another template of the workspace is named ${JSON.stringify(body.name)}`),
  });
  return { ...done, value: toTemplateResource(done.value) };
}

export async function listTemplates(
  prisma: PrismaClient,
  workspaceId: string,
  query: MessageTemplateListQuery,
): Promise<MessageTemplateListResponse> {
  const where: Prisma.MessageTemplateWhereInput = { workspaceId };
  if (query.cursor) Object.assign(where, afterNameAndId(query.cursor));
  const rows = await prisma.messageTemplate.findMany({
    where,
    orderBy: [{ name: "asc" }, { id: "asc" }],
    take: query.limit + 1,
  });
  const result = page(rows, query.limit, toTemplateResource, (r) => [r.name, r.id]);
  return { ...result, templates: result.items };
}

export async function findTemplate(prisma: PrismaClient, workspaceId: string, id: string): Promise<MessageTemplate> {
  const row = await prisma.messageTemplate.findUnique({ where: { workspaceId_id: { workspaceId, id } } });
  if (!row) throw notFound(`Template ${id}`);
  return row;
}

/** 409 while a running journey uses the template (it holds it). */
export async function deleteTemplate(prisma: PrismaClient, workspaceId: string, id: string): Promise<void> {
  await deleteUnlessHeld(prisma, workspaceId, { kind: "MessageTemplate", id }, async (tx) => {
    await tx.messageTemplate.delete({ where: { workspaceId_id: { workspaceId, id } } });
  });
}
