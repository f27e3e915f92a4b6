-- CreateEnum
CREATE TYPE "Channel" AS ENUM ('Email', 'Sms', 'MobilePush', 'Webhook');

-- CreateEnum
CREATE TYPE "SubscriptionGroupType" AS ENUM ('OptIn', 'OptOut');

-- CreateEnum
CREATE TYPE "JourneyStatus" AS ENUM ('NotStarted', 'Running', 'Paused');

-- CreateTable
CREATE TABLE "segments" (
    "workspace_id" UUID NOT NULL,
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "definition" JSONB,
    "subscription_group_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "definition_updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_recomputed" TIMESTAMPTZ(3),

    CONSTRAINT "segments_pkey" PRIMARY KEY ("workspace_id","id")
);

-- CreateTable
CREATE TABLE "segment_manual_members" (
    "workspace_id" UUID NOT NULL,
    "segment_id" UUID NOT NULL,
    "profile_id" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "segment_manual_members_pkey" PRIMARY KEY ("workspace_id","segment_id","profile_id")
);

-- CreateTable
CREATE TABLE "message_templates" (
    "workspace_id" UUID NOT NULL,
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "definition" JSONB,
    "draft" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "message_templates_pkey" PRIMARY KEY ("workspace_id","id")
);

-- CreateTable
CREATE TABLE "subscription_groups" (
    "workspace_id" UUID NOT NULL,
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "channel" "Channel" NOT NULL,
    "type" "SubscriptionGroupType" NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "subscription_groups_pkey" PRIMARY KEY ("workspace_id","id")
);

-- CreateTable
CREATE TABLE "subscription_assignments" (
    "workspace_id" UUID NOT NULL,
    "subscription_group_id" UUID NOT NULL,
    "profile_id" TEXT NOT NULL,
    "subscribed" BOOLEAN NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "subscription_assignments_pkey" PRIMARY KEY ("workspace_id","subscription_group_id","profile_id")
);

-- CreateTable
CREATE TABLE "channel_providers" (
    "workspace_id" UUID NOT NULL,
    "id" UUID NOT NULL,
    "channel" "Channel" NOT NULL,
    "type" TEXT NOT NULL,
    "config" JSONB NOT NULL,
    "secrets" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "channel_providers_pkey" PRIMARY KEY ("workspace_id","id")
);

-- CreateTable
CREATE TABLE "journeys" (
    "workspace_id" UUID NOT NULL,
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "status" "JourneyStatus" NOT NULL DEFAULT 'NotStarted',
    "can_run_multiple" BOOLEAN NOT NULL DEFAULT false,
    "draft" JSONB,
    "definition" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "status_updated_at" TIMESTAMPTZ(3),

    CONSTRAINT "journeys_pkey" PRIMARY KEY ("workspace_id","id")
);

-- CreateIndex
CREATE UNIQUE INDEX "segments_workspace_id_name_key" ON "segments"("workspace_id", "name");

-- CreateIndex
CREATE UNIQUE INDEX "message_templates_workspace_id_name_key" ON "message_templates"("workspace_id", "name");

-- CreateIndex
CREATE UNIQUE INDEX "subscription_groups_workspace_id_name_key" ON "subscription_groups"("workspace_id", "name");

-- CreateIndex
CREATE UNIQUE INDEX "channel_providers_workspace_id_channel_key" ON "channel_providers"("workspace_id", "channel");

-- CreateIndex
CREATE UNIQUE INDEX "journeys_workspace_id_name_key" ON "journeys"("workspace_id", "name");
