// The render preview: a stored or inline template, rendered for a stored or inline user with the
// same scope sends use (user, event, workspace, unsubscribe_url).
import type { MessageTemplateDefinition, RenderTemplateRequestBody, RenderTemplateResponse } from "@tidings/schema";
import type { PrismaClient } from "../db/client.ts";
import { badRequest, notFound } from "../lib/errors.ts";
import { resolveIdentity } from "../profiles/index.ts";
import { findTemplate } from "./service.ts";
import type { RenderScope } from "./liquid.ts";
import type { RenderPool } from "./render-pool.ts";

/** The `user` of the Liquid scope for a known user: its traits plus its canonical `id`. */
export async function loadScopeUser(prisma: PrismaClient, workspaceId: string, userId: string): Promise<RenderScope["user"]> {
  const { profileId } = await resolveIdentity(prisma, workspaceId, userId);
  const profile = await prisma.profile.findUnique({ where: { workspaceId_profileId: { workspaceId, profileId } } });
  if (!profile) throw notFound(`User ${JSON.stringify(userId)}`);
  return { ...(profile.traits as Record<string, unknown>), id: profileId };
}

export async function renderTemplateRequest(
  prisma: PrismaClient,
  renders: RenderPool,
  workspaceId: string,
  body: RenderTemplateRequestBody,
): Promise<RenderTemplateResponse> {
  let definition: MessageTemplateDefinition;
  let prefix = "definition";
  if (body.templateId) {
    const row = await findTemplate(prisma, workspaceId, body.templateId);
    const stored = row[body.source] as MessageTemplateDefinition | null;
    if (!stored) {
      throw badRequest(`Template ${body.templateId} has no ${body.source}`, [
        { path: "source", message: `the template has no ${body.source}` },
      ]);
    }
    definition = stored;
    prefix = body.source;
  } else if (body.definition) {
    definition = body.definition;
  } else {
    throw badRequest("Give `templateId` or `definition`", [{ path: "templateId", message: "required" }]);
  }

  const [user, workspace, group] = await Promise.all([
    body.userId ? loadScopeUser(prisma, workspaceId, body.userId) : Promise.resolve(body.user),
    prisma.workspace.findUniqueOrThrow({ where: { id: workspaceId }, select: { id: true, name: true } }),
    body.subscriptionGroupId
      ? prisma.subscriptionGroup.findUnique({ where: { workspaceId_id: { workspaceId, id: body.subscriptionGroupId } } })
      : Promise.resolve(undefined),
  ]);
  if (!user) throw badRequest("Give `userId` or `user`", [{ path: "userId", message: "required" }]);
  if (group === null) throw notFound(`Subscription group ${body.subscriptionGroupId}`);

  const unsubscribe = { workspaceId, userId: user.id, subscriptionGroupId: body.subscriptionGroupId };
  const { rendered, unresolved } = await renders.preview(
    workspaceId,
    definition,
    { user, event: body.event, workspace, unsubscribe },
    prefix,
  );
  return { type: definition.type, rendered, ...(unresolved.length ? { unresolved } : {}) };
}
