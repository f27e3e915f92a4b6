// Resolving user ids given by admins: an anonymousId or previous id stands for the profile it
// was linked to.
import type { ErrorIssue } from "@tidings/schema";
import type { PrismaClient } from "../db/client.ts";
import { badRequest } from "../lib/errors.ts";

/** The canonical profile id of each id, in input order (one query for the whole list). */
export async function canonicalIds(prisma: PrismaClient, workspaceId: string, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const links = await prisma.profileAlias.findMany({ where: { workspaceId, aliasId: { in: [...new Set(ids)] } } });
  const linked = new Map(links.map((l) => [l.aliasId, l.profileId]));
  return ids.map((id) => linked.get(id) ?? id);
}

/**
 * Resolves two lists of user ids that must not name the same user (after alias resolution);
 * 400 naming the item of the second list that repeats one of the first. Returns each list's
 * distinct profile ids.
 */
export async function resolveDisjoint(
  prisma: PrismaClient,
  workspaceId: string,
  first: { field: string; ids: string[] },
  second: { field: string; ids: string[] },
): Promise<[string[], string[]]> {
  const [a, b] = await Promise.all([canonicalIds(prisma, workspaceId, first.ids), canonicalIds(prisma, workspaceId, second.ids)]);
  const inFirst = new Set(a);
  const issues: ErrorIssue[] = b.flatMap((profileId, index) =>
    inFirst.has(profileId)
      ? [{ path: `${second.field}.${index}`, message: `user ${JSON.stringify(profileId)} is also in ${first.field}` }]
      : [],
  );
  if (issues.length > 0) throw badRequest(`A user cannot be in both ${first.field} and ${second.field}`, issues);
  return [[...inFirst], [...new Set(b)]];
}

/** The canonical profile id of any id of a user, and every id that belongs to it. */
export async function resolveIdentity(prisma: PrismaClient, workspaceId: string, id: string) {
  const [profileId = id] = await canonicalIds(prisma, workspaceId, [id]);
  const linked = await prisma.profileAlias.findMany({ where: { workspaceId, profileId }, orderBy: { createdAt: "asc" } });
  return { profileId, identities: linked.map((a) => a.aliasId) };
}
