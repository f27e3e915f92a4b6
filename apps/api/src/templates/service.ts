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
import { Prisma, type MessageTemplate } from "../generated/prisma/client.ts";
import { ApiError, badRequest, notFound } from "../http/errors.ts";
import { afterNameAndId, page } from "../http/pagination.ts";
import { assertNotUsedByRunningJourney } from "../journeys/usage.ts";
import { liquidSyntaxIssues } from "./liquid.ts";
import { isUniqueViolation } from "../db/errors.ts";

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
    ...(definition ? { definition } : {}),
    ...(draft ? { draft } : {}),
  };
}

/** Prisma's value for a nullable JSON column: undefined keeps, null clears. */
const jsonColumn = (value: MessageTemplateDefinition | null | undefined) =>
  value === null ? Prisma.DbNull : (value as Prisma.InputJsonValue | undefined);

export async function upsertTemplate(
  prisma: PrismaClient,
  workspaceId: string,
  body: UpsertMessageTemplateRequestBody,
): Promise<MessageTemplateResource> {
  const issues = [
    ...(body.definition ? liquidSyntaxIssues("definition", body.definition) : []),
    ...(body.draft ? liquidSyntaxIssues("draft", body.draft) : []),
  ];
  if (issues.length) throw badRequest("The template has Liquid syntax errors", issues);

  const fields = { name: body.name, definition: jsonColumn(body.definition), draft: jsonColumn(body.draft) };
  const create = { workspaceId, ...fields, ...(body.id ? { id: body.id } : {}) };
  const update = { ...fields, updatedAt: new Date() };
  try {
    const row = body.id
      ? await prisma.messageTemplate.upsert({ where: { workspaceId_id: { workspaceId, id: body.id } }, create, update })
      : await prisma.messageTemplate.upsert({ where: { workspaceId_name: { workspaceId, name: body.name } }, create, update });
    return toTemplateResource(row);
  } catch (err) {
    if (isUniqueViolation(err)) {
      throw new ApiError("CONFLICT", `Another template of the workspace is named ${JSON.stringify(body.name)}`);
    }
    throw err;
  }
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

export async function deleteTemplate(prisma: PrismaClient, workspaceId: string, id: string): Promise<void> {
  const row = await findTemplate(prisma, workspaceId, id);
  await assertNotUsedByRunningJourney(prisma, workspaceId, id, `Template ${JSON.stringify(row.name)}`);
  const { count } = await prisma.messageTemplate.deleteMany({ where: { workspaceId, id } });
  if (count === 0) throw notFound(`Template ${id}`);
}
