-- Retention (src/retention): indexes that keep each pruning batch a range scan of what is old.
-- Events need none: (workspace_id, event_time) exists.

-- CreateIndex
-- Partial: only deliveries that still hold a rendered message or a render context; a cleared
-- row leaves the index, so the scan for old bodies never walks the history already cleared.
CREATE INDEX "deliveries_with_body_idx" ON "deliveries"("workspace_id", "created_at", "status") WHERE "rendered" IS NOT NULL OR "context" IS NOT NULL;

-- CreateIndex
CREATE INDEX "segment_membership_changes_workspace_id_at_idx" ON "segment_membership_changes"("workspace_id", "at");
