// Small shapes shared by several resources.
import { z } from "./zod.js";

export const WorkspaceId = z.uuid().describe("Workspace identifier (UUID).");

/** `workspaceId` in an admin request (body or query): optional everywhere. */
export const RequestWorkspaceId = WorkspaceId.optional().describe(
  "Defaults to the admin key's workspace; naming another workspace is a 403.",
);

/**
 * The `name` of a resource (segment, template, group, journey, workspace, key). Trimmed, so
 * `"Onboarding "` and `"Onboarding"` name the same resource; blank names are refused.
 */
export const resourceName = (note: string) =>
  z
    .string()
    .trim()
    .min(1, "must not be empty or only whitespace")
    .max(200)
    .describe(`${note} Leading and trailing whitespace is trimmed; an empty or whitespace-only name is refused (400).`);

export const EpochMillis = z.number().int().describe("Milliseconds since the Unix epoch.");

export const DefinitionFailure = z
  .object({
    reason: z.string().describe("Why the last evaluation failed."),
    since: EpochMillis.describe("When the failures in a row began."),
    failures: z.number().int().describe("Failures in a row."),
    retryAt: EpochMillis.describe("When it is tried again (the back-off doubles per failure, from 5 s up to an hour)."),
  })
  .describe(
    "Present while the definition fails when it is evaluated: it is set aside (the workspace's other segments and journeys go on) and tried again at `retryAt`; saving a new definition tries it at once.",
  )
  .openapi("DefinitionFailure");
export type DefinitionFailure = z.infer<typeof DefinitionFailure>;

export const Cursor = z.string().describe("Opaque cursor returned as `nextCursor` by the previous page.");

export const PageLimit = z.coerce.number().int().min(1).max(500).default(50).describe("Page size (1–500, default 50).");

/** Query parameters shared by every list route. */
export const ListQuery = z.object({
  workspaceId: RequestWorkspaceId,
  cursor: Cursor.optional(),
  limit: PageLimit,
});
export type ListQuery = z.infer<typeof ListQuery>;

/**
 * A JSON object with any keys. Checked without being copied key by key, as `z.record` would:
 * events carry large `context` and `properties` objects, and ingestion parses every one.
 */
export const JsonObject = z
  .custom<Record<string, unknown>>((v) => v !== null && typeof v === "object" && !Array.isArray(v), { message: "expected an object" })
  .openapi({ type: "object", additionalProperties: {} });
export type JsonObject = z.infer<typeof JsonObject>;

/** A field the server manages (`createdAt`, `updatedAt`, …): accepted in requests and ignored. */
export const ServerManaged = z.unknown().optional().describe("Server-managed; ignored when sent.");

/**
 * The server-managed fields every upsert body accepts and ignores, so a resource read with GET
 * can be sent back with PUT even though request bodies refuse unknown fields.
 */
export const serverManagedFields = {
  createdAt: ServerManaged,
  updatedAt: ServerManaged,
  definitionUpdatedAt: ServerManaged,
  lastRecomputed: ServerManaged,
};

/** `?workspaceId=` of single-resource routes. */
export const WorkspaceQuery = z.object({ workspaceId: RequestWorkspaceId });

/** `/:id` of a resource. */
export const idParams = (what: string) => z.object({ id: z.uuid().describe(`${what} id.`) });

/** User ids sent in bulk (members, assignments). */
export const UserIdList = z.array(z.string().min(1).max(255)).max(1000);

/** A page of a list route: `items`, the same array under the resource's name, and `nextCursor`. */
export function listResponse<K extends string, T extends z.ZodType>(key: K, item: T) {
  const named = { [key]: z.array(item).describe("Same as `items`.") } as { [P in K]: z.ZodArray<T> };
  return z.object({
    items: z.array(item),
    ...named,
    nextCursor: Cursor.nullable().describe("Pass as `cursor` for the next page; null on the last page."),
  });
}
