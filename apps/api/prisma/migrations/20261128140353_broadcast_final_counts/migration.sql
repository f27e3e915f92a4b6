-- AlterTable
ALTER TABLE "broadcasts" ADD COLUMN     "final_counts" JSONB;
