// Journeys: upsert (compiling the draft, validating the definition and the status change, holding
// what a running journey uses, versioning started definitions), list, get, delete. Running
// journeys are executed by the journey runtime (./runtime), which this tells when a journey
// starts or resumes, in the same transaction.
import {
  type ErrorIssue,
  JourneyDefinition,
  type JourneyDraft,
  type JourneyListQuery,
  type JourneyResource,
  type JourneyStatus,
  type UpsertJourneyRequestBody,
} from "@tidings/schema";
import { definitionFailure, FAILURE_CLEARED } from "../db/failing.ts";
import type { PrismaClient } from "../db/client.ts";
import { lockTargets, setHolds, type Target } from "../db/references.ts";
import { prismaExecute, prismaRows, sql } from "../db/sql.ts";
import { jsonColumn, sameJson, type Tx, upsert } from "../db/upsert.ts";
import type { Journey, Prisma } from "../generated/prisma/client.ts";
import { ApiError, badRequest, notFound } from "../lib/errors.ts";
import { afterNameAndId, page } from "../http/pagination.ts";
import { lockDependents } from "../outbox/index.ts";
import { compileDraft } from "./compile.ts";
import { JourneyRuntime } from "./runtime/index.ts";
import { journeyUses, type Path } from "./usage.ts";
import { assertStatusChange, referenceIssues } from "./validate.ts";

export function toJourneyResource(row: Journey): JourneyResource {
  return {
    id: row.id,
    workspaceId: row.workspaceId,
    name: row.name,
    canRunMultiple: row.canRunMultiple,
    status: row.status,
    ...(row.draft ? { draft: row.draft as JourneyDraft } : {}),
    // A stored definition the current schema refuses is left out (the journey is failing: it says why).
    ...(row.definition && JourneyDefinition.safeParse(row.definition).success ? { definition: row.definition as JourneyDefinition } : {}),
    exitSegmentId: row.exitSegmentId,
    version: row.version,
    createdAt: row.createdAt.getTime(),
    updatedAt: row.updatedAt.getTime(),
    ...definitionFailure(row),
  };
}

export async function findJourney(prisma: PrismaClient, workspaceId: string, id: string): Promise<Journey> {
  const row = await prisma.journey.findUnique({ where: { workspaceId_id: { workspaceId, id } } });
  if (!row) throw notFound(`Journey ${id}`);
  return row;
}

/** What the request does to the definition, before looking at the stored journey. */
type DefinitionChange =
  | { kind: "keep" }
  | { kind: "set"; definition: JourneyDefinition; pathOf: (p: Path) => string }
  /** The draft sent is incomplete: a journey that has not started loses its definition. */
  | { kind: "incomplete"; issues: ErrorIssue[] };

function definitionChange(body: UpsertJourneyRequestBody): DefinitionChange {
  if (body.definition) return { kind: "set", definition: body.definition, pathOf: (p) => ["definition", ...p].join(".") };
  if (!body.draft) return { kind: "keep" };
  const compiled = compileDraft(body.draft);
  if (compiled.kind === "invalid") throw badRequest("The journey draft is invalid", compiled.issues);
  if (compiled.kind === "incomplete") return { kind: "incomplete", issues: compiled.issues };
  return { kind: "set", definition: compiled.definition, pathOf: compiled.draftPath };
}

/** A journey's stored fields, as the PUT leaves them. */
interface JourneyFields {
  name: string;
  status: JourneyStatus;
  canRunMultiple: boolean;
  draft: JourneyDraft | null;
  definition: JourneyDefinition | null;
  exitSegmentId: string | null;
  /** The version new runs take: a started journey's definition gets a new one each time it changes. */
  version: number;
}

/** The fields after the PUT: omitted ones keep their stored value. */
function fieldsAfter(body: UpsertJourneyRequestBody, change: DefinitionChange, existing: Journey | null): JourneyFields {
  const from: JourneyStatus = existing?.status ?? "NotStarted";
  const stored = (existing?.definition as JourneyDefinition | null | undefined) ?? null;
  // An incomplete draft replaces the definition of a journey that has not started; a started
  // journey keeps running the definition it has.
  const clears = change.kind === "incomplete" && from === "NotStarted";
  const status = body.status ?? from;
  const definition = change.kind === "set" ? change.definition : clears ? null : stored;
  const version = existing?.version ?? 0;
  const versioned = status !== "NotStarted" && definition !== null && (version === 0 || !sameJson(definition, stored));
  return {
    name: body.name,
    status,
    canRunMultiple: body.canRunMultiple ?? existing?.canRunMultiple ?? false,
    draft: body.draft !== undefined ? body.draft : ((existing?.draft as JourneyDraft | null | undefined) ?? null),
    definition,
    exitSegmentId: body.exitSegmentId !== undefined ? body.exitSegmentId : (existing?.exitSegmentId ?? null),
    version: versioned ? version + 1 : version,
  };
}

const nameTaken = (name: string) => new ApiError("CONFLICT", `A journey named ${JSON.stringify(name)} already exists in this workspace`);

/**
 * 400 unless the journey can be stored with these fields: the definition sent refers to what
 * exists; the status change is allowed; a journey about to run has a definition whose
 * segments, templates and subscription groups exist and fit. Those are share-locked until the
 * transaction commits the journey's holds on them, so no concurrent DELETE or change slips in.
 */
async function assertStorable(tx: Tx, workspaceId: string, change: DefinitionChange, existing: Journey | null, next: JourneyFields) {
  const from: JourneyStatus = existing?.status ?? "NotStarted";
  const running = next.status === "Running";
  if (next.exitSegmentId !== null && (next.exitSegmentId !== existing?.exitSegmentId || (running && from !== "Running"))) {
    const exit: Target = { kind: "Segment", id: next.exitSegmentId };
    const found = running ? (await lockTargets(tx, workspaceId, [exit])).Segment : await existingSegments(tx, workspaceId, [exit.id]);
    if (!found.has(exit.id)) {
      throw badRequest("The journey's exit segment does not exist in this workspace", [
        { path: "exitSegmentId", message: `no segment ${exit.id} in this workspace` },
      ]);
    }
  }
  if (change.kind === "set") {
    if (running) await lockTargets(tx, workspaceId, journeyUses(change.definition));
    const issues = await referenceIssues(tx, workspaceId, change.definition, { running });
    if (issues.length > 0) {
      throw badRequest(
        "The journey refers to resources that do not exist in this workspace or do not fit",
        issues.map((i) => ({ path: change.pathOf(i.path), message: i.message })),
      );
    }
  }
  assertStatusChange(from, next.status);
  if (!running || from === "Running" || change.kind === "set") return;
  if (!next.definition) {
    // Say what the draft still lacks: the one sent, else the stored one.
    const compiled = change.kind === "keep" && next.draft ? compileDraft(next.draft) : undefined;
    const issues = change.kind === "incomplete" ? change.issues : compiled?.kind === "incomplete" ? compiled.issues : undefined;
    if (issues) throw badRequest("A running journey needs a definition, and the draft is incomplete", issues);
    throw badRequest("A running journey needs a definition", [
      { path: "definition", message: "send a definition or a complete draft to start the journey" },
    ]);
  }
  // Resources may have been deleted or changed since the definition was stored.
  await lockTargets(tx, workspaceId, journeyUses(next.definition));
  const issues = await referenceIssues(tx, workspaceId, next.definition, { running });
  if (issues.length > 0) {
    throw badRequest(
      "The stored definition refers to resources that no longer exist or do not fit",
      issues.map((i) => ({ path: ["definition", ...i.path].join("."), message: i.message })),
    );
  }
}

/**
 * PUT semantics (src/db/upsert.ts): keyed by `id` when given, else by name; omitted fields keep
 * their stored values; nothing changed, nothing written. A running journey holds what its
 * definition uses (src/db/references.ts): taken when it starts or its definition changes while
 * it runs, released when it is paused.
 */
export async function upsertJourney(prisma: PrismaClient, workspaceId: string, body: UpsertJourneyRequestBody): Promise<JourneyResource> {
  const change = definitionChange(body);
  type Changes = Partial<JourneyFields>;
  const row = await upsert<Journey, JourneyFields, Changes>(prisma, {
    table: "journeys",
    workspaceId,
    id: body.id,
    key: sql`name = ${body.name}`,
    read: (tx, id) => tx.journey.findUnique({ where: { workspaceId_id: { workspaceId, id } } }),
    toCreate: () => fieldsAfter(body, change, null),
    changes: (existing) => {
      const next = fieldsAfter(body, change, existing);
      const changes: Changes = {};
      if (next.name !== existing.name) changes.name = next.name;
      if (next.status !== existing.status) changes.status = next.status;
      if (next.canRunMultiple !== existing.canRunMultiple) changes.canRunMultiple = next.canRunMultiple;
      if (!sameJson(next.draft, existing.draft)) changes.draft = next.draft;
      if (!sameJson(next.definition, existing.definition)) changes.definition = next.definition;
      if (next.exitSegmentId !== existing.exitSegmentId) changes.exitSegmentId = next.exitSegmentId;
      if (next.version !== existing.version) changes.version = next.version;
      return Object.keys(changes).length > 0 ? changes : null;
    },
    validate: (tx, write) => assertStorable(tx, workspaceId, change, write.existing, fieldsAfter(body, change, write.existing)),
    insert: (tx, fields, now) =>
      tx.journey.create({
        data: {
          workspaceId,
          ...(body.id ? { id: body.id } : {}),
          ...fields,
          draft: jsonColumn(fields.draft),
          definition: jsonColumn(fields.definition),
          ...(fields.status !== "NotStarted" ? { statusUpdatedAt: now } : {}),
          createdAt: now,
          updatedAt: now,
        },
      }),
    update: (tx, existing, changes, now) =>
      tx.journey.update({
        where: { workspaceId_id: { workspaceId, id: existing.id } },
        data: {
          // A field left undefined is not written (Prisma), nor is a JSON column (jsonColumn).
          name: changes.name,
          status: changes.status,
          canRunMultiple: changes.canRunMultiple,
          draft: jsonColumn(changes.draft),
          definition: jsonColumn(changes.definition),
          exitSegmentId: changes.exitSegmentId,
          version: changes.version,
          // A new version, or a journey started again, is tried at once.
          ...(changes.version !== undefined || changes.status !== undefined ? FAILURE_CLEARED : {}),
          statusUpdatedAt: changes.status !== undefined ? now : undefined,
          updatedAt: now,
        },
      }),
    afterWrite: async (tx, row, write) => {
      const before = write.existing;
      if (row.version !== (before?.version ?? 0)) {
        await prismaExecute(
          tx,
          sql`INSERT INTO journey_versions (workspace_id, journey_id, version, definition)
          VALUES (${workspaceId}::uuid, ${row.id}::uuid, ${row.version}, ${JSON.stringify(row.definition)}::jsonb)`,
        );
      }
      // A journey's entry event is a dependent of ingestion's commits (src/outbox) while it runs.
      if (before?.status !== row.status || before.version !== row.version) await lockDependents(tx, workspaceId);
      const held = before?.status === "Running";
      const holds = row.status === "Running";
      const usesChanged = before !== null && (before.version !== row.version || before.exitSegmentId !== row.exitSegmentId);
      if (holds && (!held || usesChanged)) {
        await setHolds(tx, workspaceId, { kind: "Journey", id: row.id }, await heldTargets(tx, workspaceId, row));
      } else if (held && !holds) {
        await setHolds(tx, workspaceId, { kind: "Journey", id: row.id }, []);
      }
      // The runtime learns of a start or a resume in this commit (jobs recorded with it).
      const from = before?.status ?? "NotStarted";
      const queries =
        holds && from === "NotStarted"
          ? JourneyRuntime.startQueries(workspaceId, row.id)
          : holds && from === "Paused"
            ? await resumeRuns(tx, workspaceId, row.id)
            : [];
      for (const q of queries) await prismaExecute(tx, q);
    },
    keyTaken: () => nameTaken(body.name),
  });
  return toJourneyResource(row);
}

async function existingSegments(tx: Tx, workspaceId: string, ids: string[]) {
  const rows = await tx.segment.findMany({ where: { workspaceId, id: { in: ids } }, select: { id: true } });
  return new Set(rows.map((r) => r.id));
}

/**
 * What a running journey holds: what its definition and exit segment use, and what the versions
 * its active runs follow use (they finish on theirs) — those still in the workspace (a paused
 * journey held nothing; an old version's runs do without what was deleted meanwhile).
 */
async function heldTargets(tx: Tx, workspaceId: string, row: Journey): Promise<Target[]> {
  const wanted: Target[] = journeyUses(row.definition as JourneyDefinition);
  if (row.exitSegmentId) wanted.push({ kind: "Segment", id: row.exitSegmentId });
  const older = await prismaRows<{ definition: JourneyDefinition }>(
    tx,
    sql`SELECT v.definition FROM journey_versions v WHERE v.workspace_id = ${workspaceId}::uuid AND v.journey_id = ${row.id}::uuid
      AND v.version <> ${row.version} AND EXISTS (SELECT 1 FROM journey_runs r WHERE r.workspace_id = v.workspace_id
        AND r.journey_id = v.journey_id AND r.version = v.version AND r.status = 'Active')`,
  );
  for (const v of older) wanted.push(...journeyUses(v.definition));
  const found = await lockTargets(tx, workspaceId, wanted);
  return wanted.filter((t) => found[t.kind].has(t.id));
}

/**
 * A resumed journey's waiting runs look again at once: a wait may have been satisfied, or the
 * exit segment entered, while it was paused (enters are not recorded for a paused journey).
 */
async function resumeRuns(tx: Tx, workspaceId: string, journeyId: string) {
  await prismaExecute(
    tx,
    sql`UPDATE journey_runs SET due_at = now()
    WHERE workspace_id = ${workspaceId}::uuid AND journey_id = ${journeyId}::uuid AND status = 'Active' AND waiting`,
  );
  return JourneyRuntime.wakeQueries(workspaceId);
}

/** Journeys ordered by name then id, keyset-paginated. */
export async function listJourneys(prisma: PrismaClient, workspaceId: string, query: JourneyListQuery) {
  const where: Prisma.JourneyWhereInput = { workspaceId };
  if (query.cursor) Object.assign(where, afterNameAndId(query.cursor));
  const rows = await prisma.journey.findMany({ where, orderBy: [{ name: "asc" }, { id: "asc" }], take: query.limit + 1 });
  const result = page(rows, query.limit, toJourneyResource, (r) => [r.name, r.id]);
  return { ...result, journeys: result.items };
}

/**
 * Deletes a journey that is not running (a running one must be paused first: 409). Its runs end
 * with it (removed with the journey), and the messages they queued but did not send are skipped.
 */
export async function deleteJourney(prisma: PrismaClient, workspaceId: string, id: string): Promise<void> {
  const deleted = await prisma.$transaction(async (tx) => {
    const { count } = await tx.journey.deleteMany({ where: { workspaceId, id, status: { not: "Running" } } });
    if (count === 0) return false;
    // Only a running journey holds anything; released anyway, so no hold ever outlives its journey.
    await setHolds(tx, workspaceId, { kind: "Journey", id }, []);
    await tx.delivery.updateMany({
      where: { workspaceId, journeyId: id, status: "Queued" },
      data: { status: "Skipped", reason: "the journey was deleted", updatedAt: new Date() },
    });
    return true;
  });
  if (deleted) return;
  const row = await findJourney(prisma, workspaceId, id);
  throw new ApiError("CONFLICT", `Journey ${JSON.stringify(row.name)} is running; pause it before deleting it`);
}
