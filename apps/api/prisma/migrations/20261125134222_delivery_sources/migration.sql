-- AlterTable
ALTER TABLE "deliveries" ADD COLUMN     "context" JSONB,
ADD COLUMN     "node_id" TEXT,
ADD COLUMN     "run_id" UUID,
ADD COLUMN     "subscription_group_id" UUID;

-- CreateIndex
-- Partial (edited by hand; Prisma cannot express it): rows of other sources add no entry, so a
-- broadcast's claims and marks update no journey index.
CREATE INDEX "deliveries_workspace_id_journey_id_status_due_at_idx" ON "deliveries"("workspace_id", "journey_id", "status", "due_at") WHERE "journey_id" IS NOT NULL;

-- CreateIndex
CREATE UNIQUE INDEX "deliveries_workspace_id_run_id_node_id_key" ON "deliveries"("workspace_id", "run_id", "node_id") WHERE "run_id" IS NOT NULL;

-- Every delivery has exactly one source, and the source's uniqueness is the constraints above:
-- a broadcast member (broadcast_id, user_id) or a journey run's message node (run_id, node_id).
-- A later source adds its columns and widens this check (expand/contract).
UPDATE "deliveries" d SET "subscription_group_id" = b."subscription_group_id"
FROM "broadcasts" b WHERE b."workspace_id" = d."workspace_id" AND b."id" = d."broadcast_id" AND b."subscription_group_id" IS NOT NULL;

ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_one_source" CHECK (
  ("broadcast_id" IS NOT NULL AND "run_id" IS NULL AND "node_id" IS NULL)
  OR ("broadcast_id" IS NULL AND "journey_id" IS NOT NULL AND "run_id" IS NOT NULL AND "node_id" IS NOT NULL)
);
