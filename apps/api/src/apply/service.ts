// Apply: several resources upserted in one transaction, each exactly as its own PUT route does it
// (the same service functions), in dependency order; all or nothing, or rolled back (dry run).
import pMap from "p-map";
import type { ApplyKind, ApplyRequestBody, ApplyRequestItem, ApplyResponse, ApplyResponseItem } from "@tidings/schema";
import type { PrismaClient } from "../db/client.ts";
import type { Tx } from "../db/upsert.ts";
import { ApiError } from "../lib/errors.ts";
import type { OutboundGuard } from "../outbound/index.ts";
import { upsertJourney } from "../journeys/index.ts";
import { upsertSegment } from "../segments/index.ts";
import { upsertSubscriptionGroup } from "../subscription-groups/index.ts";
import type { RenderPool } from "../templates/index.ts";
import { upsertTemplate } from "../templates/index.ts";
import { webhookWarnings } from "../templates/index.ts";

/** What a later kind may reference comes first (a segment names groups, a journey all three). */
const ORDER: readonly ApplyKind[] = ["SubscriptionGroup", "Segment", "Template", "Journey"];

interface Written {
  id: string;
  name: string;
  /** Every service sets it (a template's is optional on the wire only). */
  createdAt?: number;
  updatedAt: number;
}

function upsertItem(
  client: PrismaClient,
  workspaceId: string,
  item: ApplyRequestItem,
  liquid: Pick<RenderPool, "syntaxIssues">,
): Promise<Written> {
  switch (item.kind) {
    case "SubscriptionGroup":
      return upsertSubscriptionGroup(client, workspaceId, item.resource);
    case "Segment":
      return upsertSegment(client, workspaceId, item.resource);
    case "Template":
      return upsertTemplate(client, workspaceId, item.resource, liquid);
    case "Journey":
      return upsertJourney(client, workspaceId, item.resource);
  }
}

/**
 * The services take a client and open their own transaction (src/db/upsert.ts), retrying once when
 * an insert races another. Here each of those transactions is a savepoint of the apply's one: a
 * failed attempt rolls back to it, as its own transaction would, and the retry runs as it does
 * alone. Everything else the client is asked for goes to the apply's transaction.
 */
function savepointClient(tx: Tx): PrismaClient {
  const $transaction = async <T>(work: (tx: Tx) => Promise<T>): Promise<T> => {
    await tx.$executeRawUnsafe("SAVEPOINT apply_item");
    try {
      const result = await work(tx);
      await tx.$executeRawUnsafe("RELEASE SAVEPOINT apply_item");
      return result;
    } catch (err) {
      await tx.$executeRawUnsafe("ROLLBACK TO SAVEPOINT apply_item");
      await tx.$executeRawUnsafe("RELEASE SAVEPOINT apply_item");
      throw err;
    }
  };
  return new Proxy(tx, {
    get: (target, prop) => (prop === "$transaction" ? $transaction : Reflect.get(target, prop)),
  }) as unknown as PrismaClient;
}

/** The error of one resource, saying which: `resources.2 (Segment "Pro users"): …`, issue paths under it. */
function about(err: unknown, index: number, item: ApplyRequestItem): unknown {
  if (!(err instanceof ApiError)) return err;
  const where = `resources.${index}`;
  return new ApiError(
    err.code,
    `${where} (${item.kind} ${JSON.stringify(item.resource.name)}): ${err.message}`,
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

export async function applyResources(
  prisma: PrismaClient,
  workspaceId: string,
  body: ApplyRequestBody,
  options: { guard?: OutboundGuard; liquid: Pick<RenderPool, "syntaxIssues"> },
): Promise<ApplyResponse> {
  for (const [index, item] of body.resources.entries()) {
    const named = item.resource.workspaceId;
    if (named !== undefined && named !== workspaceId) {
      throw new ApiError("FORBIDDEN", `resources.${index}: this key may not act on workspace ${named}`);
    }
  }
  const dryRun = body.dryRun === true;
  const order = body.resources
    .map((item, index) => ({ item, index }))
    .sort((a, b) => ORDER.indexOf(a.item.kind) - ORDER.indexOf(b.item.kind));
  const run = async (tx: Tx): Promise<ApplyResponse> => {
    const client = savepointClient(tx);
    const results: ApplyResponseItem[] = new Array(body.resources.length);
    for (const { item, index } of order) {
      // The upsert stamps what it writes with a time taken after this one; a row it neither
      // creates nor changes keeps older stamps.
      const before = Date.now();
      let row: Written;
      try {
        row = await upsertItem(client, workspaceId, item, options.liquid);
      } catch (err) {
        throw about(err, index, item);
      }
      const result = (row.createdAt ?? 0) >= before ? "created" : row.updatedAt >= before ? "updated" : "unchanged";
      // A dry run's new resource keyed by name has an id that will not be its id.
      const id = dryRun && result === "created" && item.resource.id === undefined ? {} : { id: row.id };
      results[index] = { kind: item.kind, name: row.name, ...id, result };
    }
    const response = { dryRun, resources: results };
    if (dryRun) throw new DryRunDone(response);
    return response;
  };
  let response: ApplyResponse;
  try {
    // Generous limits: up to 500 resources, each with its checks, in one transaction.
    response = await prisma.$transaction(run, { maxWait: 10_000, timeout: 120_000 });
  } catch (err) {
    if (!(err instanceof DryRunDone)) throw err;
    response = err.response;
  }
  // Webhook URLs are checked as a template PUT checks them, after the transaction (host names are
  // resolved, up to a second each), a few at a time (lookups share libuv's small thread pool).
  const guard = options.guard;
  if (guard) {
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
  return response;
}
