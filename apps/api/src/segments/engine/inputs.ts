// What a compiled segment query is evaluated for, shared by the compiler (compile.ts) and its node
// compilers (compile-nodes.ts).
import { type Param, param } from "../../db/sql.ts";

/** What a compiled query is evaluated for, as parameters the statement around it may use too. */
export interface SegmentInputs {
  workspaceId: Param;
  /** The segment's id: RandomBucket's hash and Manual's members. */
  segmentId: Param;
  /** The instant evaluated at (timestamptz). */
  now: Param;
  /** The profile ids evaluated (text[]), or null for every profile of the workspace. */
  scope: Param;
}

export function segmentInputs(workspaceId: string, segmentId: string, now: Date, scope: string[] | null): SegmentInputs {
  return { workspaceId: param(workspaceId), segmentId: param(segmentId), now: param(now), scope: param(scope) };
}

export type SubscriptionGroupTypes = ReadonlyMap<string, "OptIn" | "OptOut">;
