-- AlterTable
ALTER TABLE "profiles" ADD COLUMN     "trait_time_max" BIGINT NOT NULL DEFAULT 0;

-- ------------------------------------------------------------------------------------------
-- Hand-written (not generated from schema.prisma):
-- existing profiles get the greatest of their trait times
-- tidings_require(ok, message): raises SQLSTATE TD001 unless ok; ingestion's one-statement
--   commit uses it to roll itself back when the commit needs the transactional path
-- ------------------------------------------------------------------------------------------

UPDATE "profiles" SET "trait_time_max" = coalesce((
  SELECT max((t.value #>> '{}')::double precision) FROM jsonb_each("trait_times") AS t(key, value) WHERE jsonb_typeof(t.value) = 'number'
), 0)::bigint
WHERE "trait_times" <> '{}'::jsonb;

CREATE FUNCTION "tidings_require"(ok boolean, message text)
RETURNS boolean
LANGUAGE plpgsql
AS $$
BEGIN
  IF NOT ok THEN
    RAISE EXCEPTION USING ERRCODE = 'TD001', MESSAGE = message;
  END IF;
  RETURN true;
END
$$;
