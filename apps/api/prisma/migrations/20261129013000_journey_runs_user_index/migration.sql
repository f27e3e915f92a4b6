-- A user's runs, of every journey or of one, from one index instead of two: (workspace_id,
-- journey_id, user_id, entered_at) and (workspace_id, user_id) are replaced by (workspace_id,
-- user_id, journey_id, entered_at), which serves what each served (whether a user ever ran a
-- journey, the runs list filtered by user, a user's runs, erasure). No write of a run is HOT (its
-- status and due_at are indexed), so each was paid in every write: a run is written when it
-- enters and at each move. The new index is built before the two go: reads go on while it builds;
-- writes to journey_runs wait for the build (a few seconds at a million runs).

-- CreateIndex
CREATE INDEX "journey_runs_workspace_id_user_id_journey_id_entered_at_idx" ON "journey_runs"("workspace_id", "user_id", "journey_id", "entered_at");

-- DropIndex
DROP INDEX "journey_runs_workspace_id_journey_id_user_id_entered_at_idx";

-- DropIndex
DROP INDEX "journey_runs_workspace_id_user_id_idx";
