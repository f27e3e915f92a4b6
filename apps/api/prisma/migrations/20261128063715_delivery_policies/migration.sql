-- AlterEnum
ALTER TYPE "DeliveryStatus" ADD VALUE 'Deferred';

-- AlterTable
ALTER TABLE "broadcasts" ADD COLUMN     "category" TEXT;

-- AlterTable
ALTER TABLE "deliveries" ADD COLUMN     "category" TEXT,
ADD COLUMN     "hold_action" TEXT,
ADD COLUMN     "sent_at" TIMESTAMPTZ(3),
ADD COLUMN     "timezone" TEXT,
ADD COLUMN     "timezone_source" TEXT;

-- AlterTable
ALTER TABLE "message_templates" ADD COLUMN     "category" TEXT;

-- CreateTable
CREATE TABLE "delivery_policies" (
    "workspace_id" UUID NOT NULL,
    "document" JSONB NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "delivery_policies_pkey" PRIMARY KEY ("workspace_id")
);
