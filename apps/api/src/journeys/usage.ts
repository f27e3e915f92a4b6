// Which running journeys use a resource: DELETE of a segment, template or subscription group
// answers 409 while one does.
import type { PrismaClient } from "../db/client.ts";
import { ApiError } from "../http/errors.ts";

/** Running journeys whose definition mentions `resourceId` (ids are UUIDs, so a text match is exact enough). */
export async function runningJourneysUsing(prisma: PrismaClient, workspaceId: string, resourceId: string) {
  return prisma.$queryRaw<{ id: string; name: string }[]>`
    SELECT id, name FROM journeys
    WHERE workspace_id = ${workspaceId}::uuid AND status = 'Running'
      AND strpos(definition::text, ${resourceId}) > 0`;
}

/** Throws 409 naming the journeys when a running journey still uses the resource. */
export async function assertNotUsedByRunningJourney(prisma: PrismaClient, workspaceId: string, resourceId: string, what: string) {
  const users = await runningJourneysUsing(prisma, workspaceId, resourceId);
  if (users.length > 0) {
    throw new ApiError("CONFLICT", `${what} is used by running journey(s): ${users.map((j) => j.name).join(", ")}`);
  }
}
