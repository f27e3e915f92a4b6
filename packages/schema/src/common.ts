// Small shapes shared by several resources.
import { z } from "./zod.js";

export const WorkspaceId = z.uuid().describe("Workspace identifier (UUID).");

export const EpochMillis = z.number().int().describe("Milliseconds since the Unix epoch.");

export const Cursor = z.string().describe("Opaque cursor returned as `nextCursor` by the previous page.");

export const PageLimit = z.coerce
  .number()
  .int()
  .min(1)
  .max(500)
  .default(50)
  .describe("Page size (1–500, default 50).");

/** Query parameters shared by every list route. */
export const ListQuery = z.object({
  workspaceId: WorkspaceId.optional().describe(
    "Workspace to read; defaults to the admin key's workspace and must match it.",
  ),
  cursor: Cursor.optional(),
  limit: PageLimit,
});
export type ListQuery = z.infer<typeof ListQuery>;

export const JsonObject = z.record(z.string(), z.unknown());
export type JsonObject = z.infer<typeof JsonObject>;
