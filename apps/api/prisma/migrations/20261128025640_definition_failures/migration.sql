-- AlterTable
ALTER TABLE "journeys" ADD COLUMN     "evaluation_error" TEXT,
ADD COLUMN     "evaluation_failed_at" TIMESTAMPTZ(3),
ADD COLUMN     "evaluation_failures" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "evaluation_retry_at" TIMESTAMPTZ(3);

-- AlterTable
ALTER TABLE "segments" ADD COLUMN     "evaluation_error" TEXT,
ADD COLUMN     "evaluation_failed_at" TIMESTAMPTZ(3),
ADD COLUMN     "evaluation_failures" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "evaluation_retry_at" TIMESTAMPTZ(3);
