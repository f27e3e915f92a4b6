-- DropForeignKey
ALTER TABLE "segment_membership_changes" DROP CONSTRAINT "segment_membership_changes_workspace_id_segment_id_fkey";

-- DropForeignKey
ALTER TABLE "segment_memberships" DROP CONSTRAINT "segment_memberships_workspace_id_segment_id_fkey";

-- DropForeignKey
ALTER TABLE "segment_timers" DROP CONSTRAINT "segment_timers_workspace_id_segment_id_fkey";

-- ------------------------------------------------------------------------------------------
-- A segment's rows of the segment engine (memberships, their changes, timers) go with it, as
-- the foreign keys dropped above had them go (ON DELETE CASCADE): those keys cost a check, and
-- a row lock of the segment, per row the engine wrote (schema.prisma). An evaluation writes
-- them only while its segment exists, holding it (src/segments/engine/evaluate.ts), so a
-- deletion either waits for the evaluation and then removes what it wrote, or commits first and
-- the evaluation writes nothing.
-- ------------------------------------------------------------------------------------------
CREATE FUNCTION "tidings_segment_rows_delete"()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  DELETE FROM segment_memberships WHERE workspace_id = OLD.workspace_id AND segment_id = OLD.id;
  DELETE FROM segment_membership_changes WHERE workspace_id = OLD.workspace_id AND segment_id = OLD.id;
  DELETE FROM segment_timers WHERE workspace_id = OLD.workspace_id AND segment_id = OLD.id;
  RETURN NULL;
END;
$$;

CREATE TRIGGER "segments_delete_rows" AFTER DELETE ON "segments"
  FOR EACH ROW EXECUTE FUNCTION "tidings_segment_rows_delete"();
