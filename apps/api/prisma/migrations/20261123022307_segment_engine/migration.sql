-- AlterTable
ALTER TABLE "segments" ADD COLUMN     "depends_on" TEXT[] DEFAULT ARRAY[]::TEXT[],
ADD COLUMN     "member_count" INTEGER NOT NULL DEFAULT 0;

-- CreateTable
CREATE TABLE "segment_memberships" (
    "workspace_id" UUID NOT NULL,
    "segment_id" UUID NOT NULL,
    "profile_id" TEXT NOT NULL,
    "entered_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "segment_memberships_pkey" PRIMARY KEY ("workspace_id","segment_id","profile_id")
);

-- CreateTable
CREATE TABLE "segment_membership_changes" (
    "workspace_id" UUID NOT NULL,
    "id" BIGSERIAL NOT NULL,
    "segment_id" UUID NOT NULL,
    "profile_id" TEXT NOT NULL,
    "entered" BOOLEAN NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "segment_membership_changes_pkey" PRIMARY KEY ("workspace_id","id")
);

-- CreateTable
CREATE TABLE "segment_timers" (
    "workspace_id" UUID NOT NULL,
    "segment_id" UUID NOT NULL,
    "profile_id" TEXT NOT NULL,
    "due_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "segment_timers_pkey" PRIMARY KEY ("workspace_id","segment_id","profile_id")
);

-- CreateTable
CREATE TABLE "segment_outbox" (
    "workspace_id" UUID NOT NULL,
    "id" BIGSERIAL NOT NULL,
    "ids" TEXT[],
    "keys" TEXT[],
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "segment_outbox_pkey" PRIMARY KEY ("workspace_id","id")
);

-- CreateIndex
CREATE INDEX "segment_memberships_workspace_id_profile_id_idx" ON "segment_memberships"("workspace_id", "profile_id");

-- CreateIndex
CREATE INDEX "segment_membership_changes_workspace_id_segment_id_id_idx" ON "segment_membership_changes"("workspace_id", "segment_id", "id");

-- CreateIndex
CREATE INDEX "segment_membership_changes_workspace_id_profile_id_idx" ON "segment_membership_changes"("workspace_id", "profile_id");

-- CreateIndex
CREATE INDEX "segment_timers_workspace_id_due_at_idx" ON "segment_timers"("workspace_id", "due_at");

-- CreateIndex
CREATE INDEX "events_workspace_id_event_event_time_idx" ON "events"("workspace_id", "event", "event_time");

-- AddForeignKey
ALTER TABLE "segment_memberships" ADD CONSTRAINT "segment_memberships_workspace_id_segment_id_fkey" FOREIGN KEY ("workspace_id", "segment_id") REFERENCES "segments"("workspace_id", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "segment_membership_changes" ADD CONSTRAINT "segment_membership_changes_workspace_id_segment_id_fkey" FOREIGN KEY ("workspace_id", "segment_id") REFERENCES "segments"("workspace_id", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "segment_timers" ADD CONSTRAINT "segment_timers_workspace_id_segment_id_fkey" FOREIGN KEY ("workspace_id", "segment_id") REFERENCES "segments"("workspace_id", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- ------------------------------------------------------------------------------------------
-- Hand-written (functions are not described by schema.prisma):
-- tidings_instant(value): the instant a JSON value names, per docs/segments.md, else NULL:
--   an ISO 8601 string (YYYY-MM-DD, optionally THH:MM[:SS[.fraction]] and Z or ±HH:MM; no
--   zone means UTC), or a number of epoch seconds (|n| < 1e11) or milliseconds.
-- ------------------------------------------------------------------------------------------

CREATE FUNCTION "tidings_instant"(v jsonb)
RETURNS timestamptz
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SET timezone = 'UTC'
AS $$
DECLARE
  n double precision;
BEGIN
  IF jsonb_typeof(v) = 'number' THEN
    n := (v #>> '{}')::double precision;
    IF abs(n) < 100000000000 THEN n := n * 1000; END IF;
    IF abs(n) > 8.64e15 THEN RETURN NULL; END IF;
    RETURN to_timestamp(floor(n) / 1000);
  ELSIF jsonb_typeof(v) = 'string'
    AND (v #>> '{}') ~ '^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?$' THEN
    RETURN date_trunc('milliseconds', (v #>> '{}')::timestamptz);
  END IF;
  RETURN NULL;
EXCEPTION WHEN others THEN
  RETURN NULL;
END
$$;
