-- Events in the order they arrived: GET /api/admin/events?order=received&receivedSince=… (tidings
-- events tail) reads a range of it rather than every event of the workspace.

-- CreateIndex
CREATE INDEX "events_workspace_id_received_at_idx" ON "events"("workspace_id", "received_at");
