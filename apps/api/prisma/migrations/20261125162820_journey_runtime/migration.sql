-- CreateEnum
CREATE TYPE "JourneyRunStatus" AS ENUM ('Active', 'Completed', 'Converted', 'Ended');

-- AlterTable
ALTER TABLE "journeys" ADD COLUMN     "exit_segment_id" UUID,
ADD COLUMN     "version" INTEGER NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "segment_outbox" ADD COLUMN     "track_ids" TEXT[] DEFAULT ARRAY[]::TEXT[];

-- CreateTable
CREATE TABLE "journey_versions" (
    "workspace_id" UUID NOT NULL,
    "journey_id" UUID NOT NULL,
    "version" INTEGER NOT NULL,
    "definition" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "journey_versions_pkey" PRIMARY KEY ("workspace_id","journey_id","version")
);

-- CreateTable
CREATE TABLE "journey_runs" (
    "workspace_id" UUID NOT NULL,
    "id" UUID NOT NULL,
    "journey_id" UUID NOT NULL,
    "version" INTEGER NOT NULL,
    "user_id" TEXT NOT NULL,
    "status" "JourneyRunStatus" NOT NULL DEFAULT 'Active',
    "node_id" TEXT NOT NULL,
    "waiting" BOOLEAN NOT NULL DEFAULT false,
    "wait_until" TIMESTAMPTZ(3),
    "due_at" TIMESTAMPTZ(3),
    "event" JSONB,
    "entered_at" TIMESTAMPTZ(3) NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,
    "ended_at" TIMESTAMPTZ(3),

    CONSTRAINT "journey_runs_pkey" PRIMARY KEY ("workspace_id","id")
);

-- CreateTable
CREATE TABLE "journey_node_counts" (
    "workspace_id" UUID NOT NULL,
    "journey_id" UUID NOT NULL,
    "version" INTEGER NOT NULL,
    "node_id" TEXT NOT NULL,
    "reached" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "journey_node_counts_pkey" PRIMARY KEY ("workspace_id","journey_id","version","node_id")
);

-- CreateTable
CREATE TABLE "journey_signals" (
    "workspace_id" UUID NOT NULL,
    "id" BIGSERIAL NOT NULL,
    "segment_id" UUID,
    "message_id" TEXT,
    "user_id" TEXT NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "journey_signals_pkey" PRIMARY KEY ("workspace_id","id")
);

-- CreateIndex
-- Partial (edited by hand): a user never has two active runs of one journey; ended runs repeat.
CREATE UNIQUE INDEX "journey_runs_workspace_id_journey_id_user_id_key" ON "journey_runs"("workspace_id", "journey_id", "user_id") WHERE "status" = 'Active';

-- CreateIndex
-- CreateIndex
CREATE INDEX "journey_runs_workspace_id_journey_id_user_id_entered_at_idx" ON "journey_runs"("workspace_id", "journey_id", "user_id", "entered_at");

-- Partial (edited by hand): the durable timers, drained by due time; ended runs leave it.
CREATE INDEX "journey_runs_workspace_id_journey_id_due_at_idx" ON "journey_runs"("workspace_id", "journey_id", "due_at") WHERE "status" = 'Active';

-- CreateIndex
CREATE INDEX "journey_runs_workspace_id_journey_id_entered_at_idx" ON "journey_runs"("workspace_id", "journey_id", "entered_at");

-- CreateIndex
CREATE INDEX "journey_runs_workspace_id_user_id_idx" ON "journey_runs"("workspace_id", "user_id");

-- AddForeignKey
ALTER TABLE "journey_versions" ADD CONSTRAINT "journey_versions_workspace_id_journey_id_fkey" FOREIGN KEY ("workspace_id", "journey_id") REFERENCES "journeys"("workspace_id", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "journey_runs" ADD CONSTRAINT "journey_runs_workspace_id_journey_id_fkey" FOREIGN KEY ("workspace_id", "journey_id") REFERENCES "journeys"("workspace_id", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "journey_node_counts" ADD CONSTRAINT "journey_node_counts_workspace_id_journey_id_fkey" FOREIGN KEY ("workspace_id", "journey_id") REFERENCES "journeys"("workspace_id", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Hand-written: journeys started before the runtime existed run their stored definition as
-- version 1.
INSERT INTO "journey_versions" ("workspace_id", "journey_id", "version", "definition")
SELECT "workspace_id", "id", 1, "definition" FROM "journeys" WHERE "status" <> 'NotStarted' AND "definition" IS NOT NULL;
UPDATE "journeys" SET "version" = 1 WHERE "status" <> 'NotStarted' AND "definition" IS NOT NULL;
