// The journey lifecycle: NotStarted → Running ⇄ Paused, as a table of what each status change
// does besides setting the status, and the effects a PUT applies in its transaction.
import type { JourneyDefinition, JourneyStatus } from "@tidings/schema";
import { lockTargets, type Referrer, setHolds, type Target } from "../db/references.ts";
import { prismaExecute, prismaRows, type Sql, sql } from "../db/sql.ts";
import type { Tx } from "../db/upsert.ts";
import type { Journey } from "../generated/prisma/client.ts";
import { badRequest } from "../lib/errors.ts";
import { lockDependents } from "../outbox/index.ts";
import { JourneyRuntime } from "./runtime/index.ts";
import { journeyUses } from "./usage.ts";

/** What a status change does. */
export interface Transition {
  /**
   * The journey's holds on what it uses (src/db/references.ts): taken when it starts running,
   * released when it stops, refreshed while it runs if what it uses changed; none otherwise.
   */
  holds: "take" | "release" | "refresh" | "none";
  /** What the runtime learns in the same commit: a start (entries open), a resume (waiting runs look again). */
  runtime: "start" | "resume" | null;
}

const LIFECYCLE: Record<JourneyStatus, Partial<Record<JourneyStatus, Transition>>> = {
  NotStarted: {
    NotStarted: { holds: "none", runtime: null },
    Running: { holds: "take", runtime: "start" },
  },
  Running: {
    Running: { holds: "refresh", runtime: null },
    Paused: { holds: "release", runtime: null },
  },
  Paused: {
    Paused: { holds: "none", runtime: null },
    Running: { holds: "take", runtime: "resume" },
  },
};

/** The change from `from` to `to`; a 400 for one the lifecycle does not have. */
export function transition(from: JourneyStatus, to: JourneyStatus): Transition {
  const step = LIFECYCLE[from][to];
  if (step) return step;
  const why = to === "NotStarted" ? "a journey that has started cannot go back to NotStarted" : "only a running journey can be paused";
  throw badRequest(`Status cannot change from ${from} to ${to}`, [{ path: "status", message: why }]);
}

/**
 * What a written journey's change does in the PUT's transaction: a new version is recorded; the
 * entry event's dependents are locked (src/outbox) when it is new or its status or version moved; holds follow
 * the transition; the runtime learns of a start or a resume (jobs recorded with the commit).
 */
export async function applyTransition(tx: Tx, before: Journey | null, row: Journey): Promise<void> {
  const workspaceId = row.workspaceId;
  const from = before?.status ?? "NotStarted";
  const step = transition(from, row.status);
  const versioned = row.version !== (before?.version ?? 0);
  if (versioned) {
    await prismaExecute(
      tx,
      sql`INSERT INTO journey_versions (workspace_id, journey_id, version, definition)
      VALUES (${workspaceId}::uuid, ${row.id}::uuid, ${row.version}, ${JSON.stringify(row.definition)}::jsonb)`,
    );
  }
  if (before === null || from !== row.status || versioned) await lockDependents(tx, workspaceId);
  const usesChanged = before !== null && (versioned || before.exitSegmentId !== row.exitSegmentId);
  const journey: Referrer = { kind: "Journey", id: row.id };
  if (step.holds === "take" || (step.holds === "refresh" && usesChanged))
    await setHolds(tx, workspaceId, journey, await heldTargets(tx, row));
  else if (step.holds === "release") await setHolds(tx, workspaceId, journey, []);
  const queries: Sql[] =
    step.runtime === "start"
      ? JourneyRuntime.startQueries(workspaceId, row.id)
      : step.runtime === "resume"
        ? await resumeRuns(tx, workspaceId, row.id)
        : [];
  for (const q of queries) await prismaExecute(tx, q);
}

/**
 * What a running journey holds: what its definition and exit segment use, and what the versions
 * its active runs follow use (they finish on theirs) — those still in the workspace (a paused
 * journey held nothing; an old version's runs do without what was deleted meanwhile).
 */
async function heldTargets(tx: Tx, row: Journey): Promise<Target[]> {
  const wanted: Target[] = journeyUses(row.definition as JourneyDefinition);
  if (row.exitSegmentId) wanted.push({ kind: "Segment", id: row.exitSegmentId });
  const older = await prismaRows<{ definition: JourneyDefinition }>(
    tx,
    sql`SELECT v.definition FROM journey_versions v WHERE v.workspace_id = ${row.workspaceId}::uuid AND v.journey_id = ${row.id}::uuid
      AND v.version <> ${row.version} AND EXISTS (SELECT 1 FROM journey_runs r WHERE r.workspace_id = v.workspace_id
        AND r.journey_id = v.journey_id AND r.version = v.version AND r.status = 'Active')`,
  );
  for (const v of older) wanted.push(...journeyUses(v.definition));
  const found = await lockTargets(tx, row.workspaceId, wanted);
  return wanted.filter((t) => found[t.kind].has(t.id));
}

/**
 * A resumed journey's waiting runs look again at once: a wait may have been satisfied, or the
 * exit segment entered, while it was paused (enters are not recorded for a paused journey).
 */
async function resumeRuns(tx: Tx, workspaceId: string, journeyId: string): Promise<Sql[]> {
  await prismaExecute(
    tx,
    sql`UPDATE journey_runs SET due_at = now()
    WHERE workspace_id = ${workspaceId}::uuid AND journey_id = ${journeyId}::uuid AND status = 'Active' AND waiting`,
  );
  return JourneyRuntime.wakeQueries(workspaceId);
}
