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
import { sql } from "../db/sql.ts";
import { jsonColumn, sameJson, type Tx, type Upserted, upsert } from "../db/upsert.ts";
import type { Journey, Prisma } from "../generated/prisma/client.ts";
import { ApiError, badRequest, notFound } from "../lib/errors.ts";
import { afterNameAndId, page } from "../http/pagination.ts";
import { compileDraft } from "./compile.ts";
import { applyTransition, transition } from "./lifecycle.ts";
import { journeyUses, type Path } from "./usage.ts";
import { referenceIssues } from "./validate.ts";

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
  const starts = transition(from, next.status).holds === "take";
  if (!starts || change.kind === "set") return;
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
 * PUT semantics (src/db/upsert.ts), in the caller's transaction: keyed by `id` when given, else by
 * name; omitted fields keep their stored values; nothing changed, nothing written. What a status
 * change does (holds, runtime, versions) is the lifecycle's (lifecycle.ts).
 */
export async function upsertJourney(tx: Tx, workspaceId: string, body: UpsertJourneyRequestBody): Promise<Upserted<JourneyResource>> {
  const change = definitionChange(body);
  const done = await upsert<Journey, JourneyFields, Partial<JourneyFields>>(tx, {
    table: "journeys",
    workspaceId,
    id: body.id,
    key: sql`name = ${body.name}`,
    read: (tx, id) => tx.journey.findUnique({ where: { workspaceId_id: { workspaceId, id } } }),
    toCreate: () => fieldsAfter(body, change, null),
    changes: (existing) => journeyChanges(fieldsAfter(body, change, existing), existing),
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
          ...changes,
          draft: jsonColumn(changes.draft),
          definition: jsonColumn(changes.definition),
          // A new version, or a journey started again, is tried at once.
          ...(changes.version !== undefined || changes.status !== undefined ? FAILURE_CLEARED : {}),
          statusUpdatedAt: changes.status !== undefined ? now : undefined,
          updatedAt: now,
        },
      }),
    afterWrite: (tx, row, write) => applyTransition(tx, write.existing, row),
    keyTaken: () => nameTaken(body.name),
  });
  return { ...done, value: toJourneyResource(done.value) };
}

/** The fields that differ from the stored journey's; null when none does. */
function journeyChanges(next: JourneyFields, existing: Journey): Partial<JourneyFields> | null {
  const changes: Partial<JourneyFields> = {};
  if (next.name !== existing.name) changes.name = next.name;
  if (next.status !== existing.status) changes.status = next.status;
  if (next.canRunMultiple !== existing.canRunMultiple) changes.canRunMultiple = next.canRunMultiple;
  if (!sameJson(next.draft, existing.draft)) changes.draft = next.draft;
  if (!sameJson(next.definition, existing.definition)) changes.definition = next.definition;
  if (next.exitSegmentId !== existing.exitSegmentId) changes.exitSegmentId = next.exitSegmentId;
  if (next.version !== existing.version) changes.version = next.version;
  return Object.keys(changes).length > 0 ? changes : null;
}

async function existingSegments(tx: Tx, workspaceId: string, ids: string[]) {
  const rows = await tx.segment.findMany({ where: { workspaceId, id: { in: ids } }, select: { id: true } });
  return new Set(rows.map((r) => r.id));
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
