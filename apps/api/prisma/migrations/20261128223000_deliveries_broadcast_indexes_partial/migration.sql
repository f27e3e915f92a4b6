-- Partial (edited by hand; Prisma cannot express it): a journey's deliveries (broadcast_id NULL)
-- add no entry to the two broadcast indexes, as a broadcast's add none to the journey ones. Each
-- write of a journey delivery (queued, claimed, marked: none is a HOT update, status and due_at
-- are indexed) updated eight indexes; it updates six. Every query of these indexes names a
-- broadcast (broadcast_id = … or IN …), which implies the predicate.
-- Each is built beside the one it replaces, which then goes: reads go on while it builds; writes
-- to deliveries wait for the build (a few seconds at a million rows).

-- CreateIndex
CREATE INDEX "deliveries_broadcast_status_due_partial" ON "deliveries"("workspace_id", "broadcast_id", "status", "due_at") WHERE "broadcast_id" IS NOT NULL;
DROP INDEX "deliveries_workspace_id_broadcast_id_status_due_at_idx";
ALTER INDEX "deliveries_broadcast_status_due_partial" RENAME TO "deliveries_workspace_id_broadcast_id_status_due_at_idx";

-- CreateIndex
CREATE UNIQUE INDEX "deliveries_broadcast_user_partial" ON "deliveries"("workspace_id", "broadcast_id", "user_id") WHERE "broadcast_id" IS NOT NULL;
DROP INDEX "deliveries_workspace_id_broadcast_id_user_id_key";
ALTER INDEX "deliveries_broadcast_user_partial" RENAME TO "deliveries_workspace_id_broadcast_id_user_id_key";
