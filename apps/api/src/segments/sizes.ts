// A segment's size over time: one point per hour or day, each the size after the segment's last
// change before the point's instant (segment_sizes holds one per hour in which it changed, written
// by the evaluation: engine/evaluate.ts). One index probe per point, whatever the segment's size.
import { MAX_SIZE_POINTS, type SegmentSizesQuery, type SegmentSizesResponse } from "@tidings/schema";
import type { PrismaClient } from "../db/client.ts";
import { prismaRows, sql } from "../db/sql.ts";
import { badRequest } from "../lib/errors.ts";
import { findSegment } from "./service.ts";

const STEP_MS = { hour: 3_600_000, day: 86_400_000 } as const;
const DEFAULT_SPAN_MS = 30 * 86_400_000;

export async function segmentSizes(
  prisma: PrismaClient,
  workspaceId: string,
  segmentId: string,
  query: SegmentSizesQuery,
  now = Date.now(),
): Promise<SegmentSizesResponse> {
  await findSegment(prisma, workspaceId, segmentId);
  const step = STEP_MS[query.interval];
  const to = Math.min(query.to ?? now, now);
  const from = Math.floor((query.from ?? to - DEFAULT_SPAN_MS) / step) * step;
  if (from > to) throw badRequest("`from` is after `to`", [{ path: "query.from", message: "must not be after `to`" }]);
  // Each interval's end, the last one cut at `to` (the interval under way ends now).
  const ends: number[] = [];
  for (let end = from + step; ; end += step) {
    ends.push(Math.min(end, to));
    if (end >= to) break;
    if (ends.length >= MAX_SIZE_POINTS)
      throw badRequest(`more than ${MAX_SIZE_POINTS} points asked for`, [
        {
          path: "query.from",
          message: `at most ${MAX_SIZE_POINTS} ${query.interval}s from \`from\` to \`to\`: narrow the range or use a longer interval`,
        },
      ]);
  }
  // A record covers its whole hour: the size at an instant is the last record of an hour that
  // began before it.
  const rows = await prismaRows<{ size: number | null }>(
    prisma,
    sql`SELECT (SELECT s.size FROM segment_sizes s
         WHERE s.workspace_id = ${workspaceId}::uuid AND s.segment_id = ${segmentId}::uuid AND s.hour < e.at
         ORDER BY s.hour DESC LIMIT 1) AS size
       FROM unnest(${ends.map((ms) => new Date(ms).toISOString())}::timestamptz[]) WITH ORDINALITY AS e(at, n)
       ORDER BY e.n`,
  );
  return { segmentId, interval: query.interval, points: ends.map((at, i) => ({ at, size: rows[i]?.size ?? null })) };
}
