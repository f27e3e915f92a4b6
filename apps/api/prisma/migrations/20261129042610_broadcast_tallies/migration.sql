-- CreateTable
CREATE TABLE "broadcast_tallies" (
    "workspace_id" UUID NOT NULL,
    "id" BIGSERIAL NOT NULL,
    "broadcast_id" UUID NOT NULL,
    "total" INTEGER NOT NULL DEFAULT 0,
    "sent" INTEGER NOT NULL DEFAULT 0,
    "failed" INTEGER NOT NULL DEFAULT 0,
    "skipped" INTEGER NOT NULL DEFAULT 0,
    "deferred" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "broadcast_tallies_pkey" PRIMARY KEY ("workspace_id","id")
);

-- CreateIndex
CREATE INDEX "broadcast_tallies_workspace_id_broadcast_id_idx" ON "broadcast_tallies"("workspace_id", "broadcast_id");

-- The broadcasts not completed yet (running, queued or cancelled) start from their deliveries as
-- they stand; from here on the statements that change them add their own rows.
INSERT INTO "broadcast_tallies" ("workspace_id", "broadcast_id", "total", "sent", "failed", "skipped", "deferred")
SELECT d."workspace_id", d."broadcast_id", count(*),
  count(*) FILTER (WHERE d."status" = 'Sent'), count(*) FILTER (WHERE d."status" = 'Failed'),
  count(*) FILTER (WHERE d."status" = 'Skipped'), count(*) FILTER (WHERE d."status" = 'Deferred')
FROM "deliveries" d
JOIN "broadcasts" b ON b."workspace_id" = d."workspace_id" AND b."id" = d."broadcast_id"
WHERE b."final_counts" IS NULL
GROUP BY d."workspace_id", d."broadcast_id";
