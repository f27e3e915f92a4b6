-- events.profile_id held the id an event was sent under (userId, else anonymousId), not the
-- profile it belongs to once identities are linked: renamed to identity_id, and the view
-- events_resolved gives each event its canonical profile.
--
-- Prisma's diff for this rename (DROP COLUMN "profile_id", ADD COLUMN "identity_id" TEXT NOT
-- NULL, drop and re-create the index) would lose every stored event's id and fails on a
-- non-empty table; rewritten by hand as renames, which give the same schema and keep the data.

-- AlterTable
ALTER TABLE "events" RENAME COLUMN "profile_id" TO "identity_id";

-- RenameIndex
ALTER INDEX "events_workspace_id_profile_id_event_time_idx" RENAME TO "events_workspace_id_identity_id_event_time_idx";

-- ------------------------------------------------------------------------------------------
-- Hand-written (not generated from schema.prisma, which describes views only behind the `views`
-- preview feature; without it the schema engine's diff ignores them, so the drift test passes):
-- events_resolved: every column of events plus profile_id, the profile the event belongs to
--   now (identity_id resolved through profile_aliases). Ingestion keeps every alias pointing
--   at a canonical profile (linking re-points the older links), so one lookup resolves.
--   Code that groups or filters events by profile reads this view, never events.identity_id
--   joined to profiles. To list one profile's events, filtering events on identity_id IN (the
--   profile id and its aliases) uses the (workspace_id, identity_id, event_time) index.
-- ------------------------------------------------------------------------------------------

CREATE VIEW "events_resolved" AS
SELECT
  e."workspace_id",
  e."message_id",
  e."type",
  coalesce(a."profile_id", e."identity_id") AS "profile_id",
  e."identity_id",
  e."user_id",
  e."anonymous_id",
  e."event",
  e."event_time",
  e."received_at",
  e."payload"
FROM "events" e
LEFT JOIN "profile_aliases" a ON a."workspace_id" = e."workspace_id" AND a."alias_id" = e."identity_id";
