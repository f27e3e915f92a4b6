-- CreateEnum
CREATE TYPE "DeliveryStatus" AS ENUM ('Queued', 'Sending', 'Sent', 'Failed', 'Skipped');

-- CreateEnum
CREATE TYPE "BroadcastStatus" AS ENUM ('Queued', 'Running', 'Completed', 'Failed', 'Cancelled');

-- AlterEnum
ALTER TYPE "ReferrerKind" ADD VALUE 'Broadcast';

-- CreateTable
CREATE TABLE "deliveries" (
    "workspace_id" UUID NOT NULL,
    "id" UUID NOT NULL,
    "user_id" TEXT NOT NULL,
    "channel" "Channel" NOT NULL,
    "template_id" UUID,
    "broadcast_id" UUID,
    "journey_id" UUID,
    "status" "DeliveryStatus" NOT NULL,
    "reason" TEXT,
    "provider_message_id" TEXT,
    "contact" TEXT,
    "rendered" JSONB,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "due_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "deliveries_pkey" PRIMARY KEY ("workspace_id","id")
);

-- CreateTable
CREATE TABLE "broadcasts" (
    "workspace_id" UUID NOT NULL,
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "status" "BroadcastStatus" NOT NULL DEFAULT 'Queued',
    "request" JSONB NOT NULL,
    "channel" "Channel" NOT NULL,
    "template" JSONB,
    "template_id" UUID,
    "segment_id" UUID,
    "subscription_group_id" UUID,
    "rate_limit_per_second" INTEGER,
    "audience" INTEGER NOT NULL DEFAULT 0,
    "reason" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "completed_at" TIMESTAMPTZ(3),

    CONSTRAINT "broadcasts_pkey" PRIMARY KEY ("workspace_id","id")
);

-- CreateTable
CREATE TABLE "send_pacing" (
    "workspace_id" UUID NOT NULL,
    "key" TEXT NOT NULL,
    "paced_until" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "send_pacing_pkey" PRIMARY KEY ("workspace_id","key")
);

-- CreateIndex
CREATE INDEX "deliveries_workspace_id_broadcast_id_status_due_at_idx" ON "deliveries"("workspace_id", "broadcast_id", "status", "due_at");

-- CreateIndex
CREATE INDEX "deliveries_workspace_id_user_id_idx" ON "deliveries"("workspace_id", "user_id");

-- CreateIndex
CREATE INDEX "deliveries_workspace_id_created_at_idx" ON "deliveries"("workspace_id", "created_at");

-- CreateIndex
CREATE UNIQUE INDEX "deliveries_workspace_id_broadcast_id_user_id_key" ON "deliveries"("workspace_id", "broadcast_id", "user_id");

-- CreateIndex
CREATE UNIQUE INDEX "broadcasts_workspace_id_name_key" ON "broadcasts"("workspace_id", "name");
