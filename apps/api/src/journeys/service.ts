// Journeys: upsert (compiling the draft, validating the definition and the status change), list,
// get, delete. Running journeys are executed by the journey runtime, not here.
import type {
  ErrorIssue,
  JourneyDefinition,
  JourneyDraft,
  JourneyListQuery,
  JourneyResource,
  JourneyStatus,
  UpsertJourneyRequestBody,
} from "@tidings/schema";
import type { PrismaClient } from "../db/client.ts";
import { type Journey, Prisma } from "../generated/prisma/client.ts";
import { ApiError, badRequest, notFound } from "../http/errors.ts";
import { afterNameAndId, page } from "../http/pagination.ts";
import { compileDraft } from "./compile.ts";
import { assertStatusChange, type ReferenceReader, referenceIssues } from "./validate.ts";
import { isUniqueViolation } from "../db/errors.ts";

type Path = (string | number)[];

export function toJourneyResource(row: Journey): JourneyResource {
  return {
    id: row.id,
    workspaceId: row.workspaceId,
    name: row.name,
    canRunMultiple: row.canRunMultiple,
    status: row.status,
    ...(row.draft ? { draft: row.draft as JourneyDraft } : {}),
    ...(row.definition ? { definition: row.definition as JourneyDefinition } : {}),
    createdAt: row.createdAt.getTime(),
    updatedAt: row.updatedAt.getTime(),
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
  | { kind: "set"; definition: JourneyDefinition }
  /** The draft sent is incomplete: a journey that has not started loses its definition. */
  | { kind: "incomplete"; issues: ErrorIssue[] };

async function definitionChange(prisma: PrismaClient, workspaceId: string, body: UpsertJourneyRequestBody): Promise<DefinitionChange> {
  let definition: JourneyDefinition;
  let pathOf: (p: Path) => string;
  if (body.definition) {
    definition = body.definition;
    pathOf = (p) => ["definition", ...p].join(".");
  } else if (body.draft) {
    const compiled = compileDraft(body.draft);
    if (compiled.kind === "invalid") throw badRequest("The journey draft is invalid", compiled.issues);
    if (compiled.kind === "incomplete") return { kind: "incomplete", issues: compiled.issues };
    definition = compiled.definition;
    pathOf = compiled.draftPath;
  } else return { kind: "keep" };
  const issues = await referenceIssues(prisma, workspaceId, definition);
  if (issues.length > 0) {
    throw badRequest(
      "The journey refers to resources that do not exist in this workspace or do not fit",
      issues.map((i) => ({ path: pathOf(i.path), message: i.message })),
    );
  }
  return { kind: "set", definition };
}

const nameTaken = (name: string) => new ApiError("CONFLICT", `A journey named ${JSON.stringify(name)} already exists in this workspace`);

/** 400 unless the journey about to be stored as Running has a definition that is still valid. */
async function assertRunnable(
  prisma: ReferenceReader,
  workspaceId: string,
  change: DefinitionChange,
  definition: JourneyDefinition | null,
  storedDraft: JourneyDraft | null,
): Promise<void> {
  if (change.kind === "set") return;
  if (!definition) {
    // Say what the draft still lacks: the one sent, else the stored one.
    const compiled = change.kind === "keep" && storedDraft ? compileDraft(storedDraft) : undefined;
    const issues = change.kind === "incomplete" ? change.issues : compiled?.kind === "incomplete" ? compiled.issues : undefined;
    if (issues) throw badRequest("A running journey needs a definition, and the draft is incomplete", issues);
    throw badRequest("A running journey needs a definition", [
      { path: "definition", message: "send a definition or a complete draft to start the journey" },
    ]);
  }
  // Resources may have been deleted since the definition was stored.
  const issues = await referenceIssues(prisma, workspaceId, definition);
  if (issues.length > 0) {
    throw badRequest(
      "The stored definition refers to resources that no longer exist or do not fit",
      issues.map((i) => ({ path: ["definition", ...i.path].join("."), message: i.message })),
    );
  }
}

/**
 * PUT semantics: keyed by `id` when given, else by name; omitted fields keep their stored values.
 * The row is locked while the status change is checked, so two PUTs cannot both start it from an
 * inconsistent state.
 */
export async function upsertJourney(
  prisma: PrismaClient,
  workspaceId: string,
  body: UpsertJourneyRequestBody,
): Promise<JourneyResource> {
  const change = await definitionChange(prisma, workspaceId, body);
  const attempt = () =>
    prisma.$transaction(async (tx) => {
      const locked = body.id
        ? await tx.$queryRaw<{ id: string }[]>`SELECT id FROM journeys WHERE workspace_id = ${workspaceId}::uuid AND id = ${body.id}::uuid FOR UPDATE`
        : await tx.$queryRaw<{ id: string }[]>`SELECT id FROM journeys WHERE workspace_id = ${workspaceId}::uuid AND name = ${body.name} FOR UPDATE`;
      const existing = locked[0]
        ? await tx.journey.findUniqueOrThrow({ where: { workspaceId_id: { workspaceId, id: locked[0].id } } })
        : null;

      const from: JourneyStatus = existing?.status ?? "NotStarted";
      const to: JourneyStatus = body.status ?? from;
      assertStatusChange(from, to);
      const stored = (existing?.definition as JourneyDefinition | null | undefined) ?? null;
      // An incomplete draft replaces the definition of a journey that has not started; a started
      // journey keeps running the definition it has.
      const clears = change.kind === "incomplete" && from === "NotStarted";
      if (to === "Running" && from !== "Running") {
        await assertRunnable(tx, workspaceId, change, clears ? null : stored, body.draft === null ? null : (existing?.draft as JourneyDraft | null));
      }

      const now = new Date();
      const definition =
        change.kind === "set" ? (change.definition as Prisma.InputJsonValue) : clears ? Prisma.DbNull : undefined;
      const data = {
        name: body.name,
        status: to,
        ...(body.canRunMultiple !== undefined ? { canRunMultiple: body.canRunMultiple } : {}),
        ...(body.draft !== undefined ? { draft: body.draft === null ? Prisma.DbNull : (body.draft as Prisma.InputJsonValue) } : {}),
        ...(definition !== undefined ? { definition } : {}),
        ...(to !== from ? { statusUpdatedAt: now } : {}),
        updatedAt: now,
      };
      const row = existing
        ? await tx.journey.update({ where: { workspaceId_id: { workspaceId, id: existing.id } }, data })
        : await tx.journey.create({ data: { ...data, workspaceId, ...(body.id ? { id: body.id } : {}), createdAt: now } });
      return toJourneyResource(row);
    });

  try {
    return await attempt();
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    // Keyed by name, a concurrent PUT may have created it first: this one then updates it.
    if (!body.id) {
      try {
        return await attempt();
      } catch (again) {
        if (isUniqueViolation(again)) throw nameTaken(body.name);
        throw again;
      }
    }
    throw nameTaken(body.name);
  }
}

/** Journeys ordered by name then id, keyset-paginated. */
export async function listJourneys(prisma: PrismaClient, workspaceId: string, query: JourneyListQuery) {
  const where: Prisma.JourneyWhereInput = { workspaceId };
  if (query.cursor) Object.assign(where, afterNameAndId(query.cursor));
  const rows = await prisma.journey.findMany({ where, orderBy: [{ name: "asc" }, { id: "asc" }], take: query.limit + 1 });
  const result = page(rows, query.limit, toJourneyResource, (r) => [r.name, r.id]);
  return { ...result, journeys: result.items };
}

/** Deletes a journey that is not running (a running one must be paused first: 409). */
export async function deleteJourney(prisma: PrismaClient, workspaceId: string, id: string): Promise<void> {
  const { count } = await prisma.journey.deleteMany({ where: { workspaceId, id, status: { not: "Running" } } });
  if (count > 0) return;
  const row = await findJourney(prisma, workspaceId, id);
  throw new ApiError("CONFLICT", `Journey ${JSON.stringify(row.name)} is running; pause it before deleting it`);
}
