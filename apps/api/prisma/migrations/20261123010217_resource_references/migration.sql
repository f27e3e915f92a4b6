-- CreateEnum
CREATE TYPE "ReferrerKind" AS ENUM ('Journey', 'Segment');

-- CreateTable
CREATE TABLE "segment_references" (
    "workspace_id" UUID NOT NULL,
    "target_id" UUID NOT NULL,
    "referrer_kind" "ReferrerKind" NOT NULL,
    "referrer_id" UUID NOT NULL,

    CONSTRAINT "segment_references_pkey" PRIMARY KEY ("workspace_id","target_id","referrer_kind","referrer_id")
);

-- CreateTable
CREATE TABLE "message_template_references" (
    "workspace_id" UUID NOT NULL,
    "target_id" UUID NOT NULL,
    "referrer_kind" "ReferrerKind" NOT NULL,
    "referrer_id" UUID NOT NULL,

    CONSTRAINT "message_template_references_pkey" PRIMARY KEY ("workspace_id","target_id","referrer_kind","referrer_id")
);

-- CreateTable
CREATE TABLE "subscription_group_references" (
    "workspace_id" UUID NOT NULL,
    "target_id" UUID NOT NULL,
    "referrer_kind" "ReferrerKind" NOT NULL,
    "referrer_id" UUID NOT NULL,

    CONSTRAINT "subscription_group_references_pkey" PRIMARY KEY ("workspace_id","target_id","referrer_kind","referrer_id")
);

-- CreateIndex
CREATE INDEX "segment_references_workspace_id_referrer_kind_referrer_id_idx" ON "segment_references"("workspace_id", "referrer_kind", "referrer_id");

-- CreateIndex
CREATE INDEX "message_template_references_workspace_id_referrer_kind_refe_idx" ON "message_template_references"("workspace_id", "referrer_kind", "referrer_id");

-- CreateIndex
CREATE INDEX "subscription_group_references_workspace_id_referrer_kind_re_idx" ON "subscription_group_references"("workspace_id", "referrer_kind", "referrer_id");

-- AddForeignKey
ALTER TABLE "segment_references" ADD CONSTRAINT "segment_references_workspace_id_target_id_fkey" FOREIGN KEY ("workspace_id", "target_id") REFERENCES "segments"("workspace_id", "id") ON DELETE RESTRICT ON UPDATE RESTRICT;

-- AddForeignKey
ALTER TABLE "message_template_references" ADD CONSTRAINT "message_template_references_workspace_id_target_id_fkey" FOREIGN KEY ("workspace_id", "target_id") REFERENCES "message_templates"("workspace_id", "id") ON DELETE RESTRICT ON UPDATE RESTRICT;

-- AddForeignKey
ALTER TABLE "subscription_group_references" ADD CONSTRAINT "subscription_group_references_workspace_id_target_id_fkey" FOREIGN KEY ("workspace_id", "target_id") REFERENCES "subscription_groups"("workspace_id", "id") ON DELETE RESTRICT ON UPDATE RESTRICT;

-- ------------------------------------------------------------------------------------------
-- Hand-written: backfill. What a journey or a segment uses used to be found by a text search
-- over definitions; now the referrer holds its targets as rows (src/db/references.ts). Existing
-- referrers get theirs: a running journey holds the segments, templates and subscription groups
-- its definition names; a segment, the subscription groups it names (its column and
-- SubscriptionGroup nodes). Only targets that still exist are held: a running journey that
-- points at something deleted before holds existed keeps running without that hold, and is
-- checked again when it is paused and resumed. Ids that are not UUIDs name nothing.
-- ------------------------------------------------------------------------------------------

INSERT INTO "segment_references" ("workspace_id", "target_id", "referrer_kind", "referrer_id")
SELECT DISTINCT j."workspace_id", s."id", 'Journey'::"ReferrerKind", j."id"
FROM "journeys" j
CROSS JOIN LATERAL (
  SELECT CASE WHEN jsonb_typeof(j."definition"->'nodes') = 'array' THEN j."definition"->'nodes' ELSE '[]'::jsonb END AS "nodes"
) d
CROSS JOIN LATERAL (
  SELECT j."definition"->'entryNode'->>'segment' AS "ref" WHERE j."definition"->'entryNode'->>'type' = 'EntryNode'
  UNION ALL
  SELECT n->>'segment' FROM jsonb_array_elements(d."nodes") n WHERE n->>'type' = 'SegmentSplitNode'
  UNION ALL
  SELECT c->>'segmentId'
  FROM jsonb_array_elements(d."nodes") n
  CROSS JOIN LATERAL jsonb_array_elements(
    CASE WHEN n->>'type' = 'WaitForNode' AND jsonb_typeof(n->'segmentChildren') = 'array' THEN n->'segmentChildren' ELSE '[]'::jsonb END
  ) c
) r
JOIN "segments" s ON s."workspace_id" = j."workspace_id"
  AND s."id" = CASE WHEN r."ref" ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN r."ref"::uuid END
WHERE j."status" = 'Running' AND jsonb_typeof(j."definition") = 'object';

INSERT INTO "message_template_references" ("workspace_id", "target_id", "referrer_kind", "referrer_id")
SELECT DISTINCT j."workspace_id", t."id", 'Journey'::"ReferrerKind", j."id"
FROM "journeys" j
CROSS JOIN LATERAL jsonb_array_elements(
  CASE WHEN jsonb_typeof(j."definition"->'nodes') = 'array' THEN j."definition"->'nodes' ELSE '[]'::jsonb END
) n
JOIN "message_templates" t ON t."workspace_id" = j."workspace_id"
  AND t."id" = CASE WHEN n->>'templateId' ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN (n->>'templateId')::uuid END
WHERE j."status" = 'Running' AND jsonb_typeof(j."definition") = 'object' AND n->>'type' = 'MessageNode';

INSERT INTO "subscription_group_references" ("workspace_id", "target_id", "referrer_kind", "referrer_id")
SELECT DISTINCT j."workspace_id", g."id", 'Journey'::"ReferrerKind", j."id"
FROM "journeys" j
CROSS JOIN LATERAL jsonb_array_elements(
  CASE WHEN jsonb_typeof(j."definition"->'nodes') = 'array' THEN j."definition"->'nodes' ELSE '[]'::jsonb END
) n
JOIN "subscription_groups" g ON g."workspace_id" = j."workspace_id"
  AND g."id" = CASE WHEN n->>'subscriptionGroupId' ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN (n->>'subscriptionGroupId')::uuid END
WHERE j."status" = 'Running' AND jsonb_typeof(j."definition") = 'object' AND n->>'type' = 'MessageNode';

INSERT INTO "subscription_group_references" ("workspace_id", "target_id", "referrer_kind", "referrer_id")
SELECT DISTINCT s."workspace_id", g."id", 'Segment'::"ReferrerKind", s."id"
FROM "segments" s
CROSS JOIN LATERAL (
  SELECT s."subscription_group_id"::text AS "ref"
  UNION ALL
  SELECT n->>'subscriptionGroupId'
  FROM jsonb_array_elements(
    CASE WHEN jsonb_typeof(s."definition") = 'object' THEN
      jsonb_build_array(s."definition"->'entryNode')
        || CASE WHEN jsonb_typeof(s."definition"->'nodes') = 'array' THEN s."definition"->'nodes' ELSE '[]'::jsonb END
    ELSE '[]'::jsonb END
  ) n
  WHERE n->>'type' = 'SubscriptionGroup'
) r
JOIN "subscription_groups" g ON g."workspace_id" = s."workspace_id"
  AND g."id" = CASE WHEN r."ref" ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN r."ref"::uuid END;
