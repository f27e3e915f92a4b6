// The workspace's delivery policies: one document, replaced whole by PUT, read by every chunk the
// senders claim (a primary-key read; a change applies to the next chunk in every process).
import type { Policies, PoliciesBody, PoliciesResource } from "@tidings/schema";
import { DEFAULT_TTL_SECONDS, PoliciesBody as PoliciesSchema } from "@tidings/schema";
import type pg from "pg";
import type { PrismaClient } from "../db/client.ts";
import type { Tx, Upserted } from "../db/upsert.ts";
import { sql } from "../db/sql.ts";

const EMPTY: Policies = {
  timeToLiveSeconds: DEFAULT_TTL_SECONDS,
  categories: [],
  frequencyCaps: [],
  sendWindows: [],
  providerRates: [],
};

/** The stored document as policies (what PUT validated; a document that no longer parses counts as none). */
function fromDocument(document: unknown): Policies {
  const parsed = PoliciesSchema.safeParse(document);
  if (!parsed.success) return EMPTY;
  const { workspaceId: _w, createdAt: _c, updatedAt: _u, definitionUpdatedAt: _d, lastRecomputed: _l, ...policies } = parsed.data;
  return policies;
}

export async function getPolicies(prisma: Pick<PrismaClient, "deliveryPolicy">, workspaceId: string): Promise<PoliciesResource> {
  const row = await prisma.deliveryPolicy.findUnique({ where: { workspaceId } });
  return {
    workspaceId,
    ...(row ? fromDocument(row.document) : EMPTY),
    ...(row ? { updatedAt: row.updatedAt.getTime() } : {}),
  };
}

/** The name apply reports the workspace's policies under (they have no name of their own). */
export const POLICIES_NAME = "policies";

/**
 * Replaces the workspace's policies in the caller's transaction (PUT and apply): unchanged when
 * the stored document equals the new one. Answers them as stored.
 */
export async function upsertPolicies(tx: Tx, workspaceId: string, body: PoliciesBody): Promise<Upserted<PoliciesResource>> {
  const document = JSON.parse(JSON.stringify(fromDocument(PoliciesSchema.parse(body))));
  const existing = await tx.deliveryPolicy.findUnique({ where: { workspaceId } });
  const action = !existing
    ? "created"
    : JSON.stringify(fromDocument(existing.document)) === JSON.stringify(document)
      ? "unchanged"
      : "updated";
  if (action !== "unchanged")
    await tx.deliveryPolicy.upsert({
      where: { workspaceId },
      create: { workspaceId, document },
      update: { document, updatedAt: new Date() },
    });
  return { value: await getPolicies(tx, workspaceId), action };
}

/** The policies a chunk of sends is decided by. */
export async function policiesFor(pool: Pick<pg.Pool, "query">, workspaceId: string): Promise<Policies> {
  const { rows } = await pool.query<{ document: unknown }>(sql`SELECT document FROM delivery_policies WHERE workspace_id = ${workspaceId}`);
  return rows[0] ? fromDocument(rows[0].document) : EMPTY;
}

/** Whether any rule may hold a message (caps or windows): else the senders skip the gate. */
export const holdsMessages = (p: Policies) => p.frequencyCaps.length > 0 || p.sendWindows.length > 0;
