-- Nothing reads segment_membership_changes by segment (erasure reads it by user, retention by
-- time), and every change paid for this index (schema.prisma). The previous release does not
-- need it either: dropping an index is an expand step (docs/operations.md).
-- DropIndex
DROP INDEX "segment_membership_changes_workspace_id_segment_id_id_idx";
