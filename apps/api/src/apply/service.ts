// Apply: several resources upserted in one transaction, each exactly as its own PUT route does it
// (the same service functions), in dependency order; all or nothing, or rolled back (dry run).
import pMap from "p-map";
import type { ApplyKind, ApplyRequestBody, ApplyRequestItem, ApplyResponse, ApplyResponseItem } from "@tidings/schema";
import type { PrismaClient } from "../db/client.ts";
import type { Tx, Upserted } from "../db/upsert.ts";
import { ApiError } from "../lib/errors.ts";
import type { OutboundGuard } from "../outbound/index.ts";
import { upsertJourney } from "../journeys/index.ts";
import { POLICIES_NAME, upsertPolicies } from "../policies/index.ts";
import { upsertSegment } from "../segments/index.ts";
import { upsertSubscriptionGroup } from "../subscription-groups/index.ts";
import type { RenderPool } from "../templates/index.ts";
import { assertTemplateSyntax, upsertTemplate, webhookWarnings } from "../templates/index.ts";

/** What a later kind may reference comes first (a segment names groups, a journey all three). */
const ORDER: readonly ApplyKind[] = ["SubscriptionGroup", "Segment", "Template", "Journey", "Policies"];

/** What each kind's upsert answers, in the caller's transaction (the same service its PUT route runs). */
function upsertItem(tx: Tx, workspaceId: string, item: ApplyRequestItem): Promise<Upserted<{ id: string; name: string }>> {
  switch (item.kind) {
    case "SubscriptionGroup":
      return upsertSubscriptionGroup(tx, workspaceId, item.resource);
    case "Segment":
      return upsertSegment(tx, workspaceId, item.resource);
    case "Template":
      return upsertTemplate(tx, workspaceId, item.resource);
    case "Journey":
      return upsertJourney(tx, workspaceId, item.resource);
    case "Policies":
      return upsertPolicies(tx, workspaceId, item.resource).then(({ action }) => ({
        value: { id: workspaceId, name: POLICIES_NAME },
        action,
      }));
  }
}

/** The error of one resource, saying which: `resources.2 (Segment "Pro users"): …`, issue paths under it. */
function about(err: unknown, index: number, item: ApplyRequestItem): unknown {
  if (!(err instanceof ApiError)) return err;
  const where = `resources.${index}`;
  return new ApiError(
    err.code,
    `${where} (${item.kind}${"name" in item.resource ? ` ${JSON.stringify(item.resource.name)}` : ""}): ${err.message}`,
    err.issues?.map((i) => ({ ...i, path: `${where}.resource.${i.path}` })),
    err.headers,
  );
}

/** Thrown to roll a dry run back, carrying its answer out of the transaction. */
class DryRunDone extends Error {
  constructor(readonly response: ApplyResponse) {
    super("dry run");
  }
}

/** 403 for a resource that names another workspace; the 400 of a template whose Liquid does not parse (before any transaction). */
async function assertApplicable(workspaceId: string, body: ApplyRequestBody, liquid: Pick<RenderPool, "syntaxIssues">): Promise<void> {
  for (const [index, item] of body.resources.entries()) {
    const named = item.resource.workspaceId;
    if (named !== undefined && named !== workspaceId) {
      throw new ApiError("FORBIDDEN", `resources.${index}: this key may not act on workspace ${named}`);
    }
  }
  for (const [index, item] of body.resources.entries()) {
    if (item.kind !== "Template") continue;
    await assertTemplateSyntax(liquid, item.resource).catch((err) => {
      throw about(err, index, item);
    });
  }
}

/** Every resource upserted in `tx`, in dependency order; the answer in the request's order. */
async function upsertAll(tx: Tx, workspaceId: string, body: ApplyRequestBody): Promise<ApplyResponse> {
  const dryRun = body.dryRun === true;
  const order = body.resources
    .map((item, index) => ({ item, index }))
    .sort((a, b) => ORDER.indexOf(a.item.kind) - ORDER.indexOf(b.item.kind));
  const results: ApplyResponseItem[] = new Array(body.resources.length);
  for (const { item, index } of order) {
    const { value, action } = await upsertItem(tx, workspaceId, item).catch((err) => {
      throw about(err, index, item);
    });
    // A dry run's new resource keyed by name has an id that will not be its id.
    const keyedByName = item.kind !== "Policies" && item.resource.id === undefined;
    const id = dryRun && action === "created" && keyedByName ? {} : { id: value.id };
    results[index] = { kind: item.kind, name: value.name, ...id, result: action };
  }
  return { dryRun, resources: results };
}

export async function applyResources(
  prisma: PrismaClient,
  workspaceId: string,
  body: ApplyRequestBody,
  options: { guard?: OutboundGuard; liquid: Pick<RenderPool, "syntaxIssues"> },
): Promise<ApplyResponse> {
  await assertApplicable(workspaceId, body, options.liquid);
  let response: ApplyResponse;
  try {
    // Generous limits: up to 500 resources, each with its checks, in one transaction.
    response = await prisma.$transaction(
      async (tx) => {
        const done = await upsertAll(tx, workspaceId, body);
        if (done.dryRun) throw new DryRunDone(done);
        return done;
      },
      { maxWait: 10_000, timeout: 120_000 },
    );
  } catch (err) {
    if (!(err instanceof DryRunDone)) throw err;
    response = err.response;
  }
  if (options.guard) await addWebhookWarnings(response, body, options.guard);
  return response;
}

/**
 * Webhook URLs are checked as a template PUT checks them, after the transaction (host names are
 * resolved, up to a second each), a few at a time (lookups share libuv's small thread pool).
 */
async function addWebhookWarnings(response: ApplyResponse, body: ApplyRequestBody, guard: OutboundGuard): Promise<void> {
  await pMap(
    body.resources.entries(),
    async ([index, item]) => {
      if (item.kind !== "Template") return;
      const warnings = await webhookWarnings(item.resource, { guard });
      if (warnings.length) response.resources[index] = { ...response.resources[index]!, warnings };
    },
    { concurrency: 4 },
  );
}
