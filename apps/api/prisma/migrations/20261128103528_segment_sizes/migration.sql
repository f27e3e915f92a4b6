-- CreateTable
CREATE TABLE "segment_sizes" (
    "workspace_id" UUID NOT NULL,
    "segment_id" UUID NOT NULL,
    "hour" TIMESTAMPTZ(3) NOT NULL,
    "size" INTEGER NOT NULL,

    CONSTRAINT "segment_sizes_pkey" PRIMARY KEY ("workspace_id","segment_id","hour")
);

-- CreateIndex
CREATE INDEX "segment_sizes_workspace_id_hour_idx" ON "segment_sizes"("workspace_id", "hour");

-- Every segment's size now, as the first point of its history.
INSERT INTO "segment_sizes" ("workspace_id", "segment_id", "hour", "size")
SELECT "workspace_id", "id", date_trunc('hour', now()), "member_count" FROM "segments";
