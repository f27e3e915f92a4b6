// PUT by id-or-key, one implementation for every admin resource (segments, templates,
// subscription groups, journeys, providers). Each resource gives its pieces; this runs them in
// one transaction with one set of rules:
// - keyed by `id` when the request has one (absent: created with that id), else by the
//   resource's other key (a name; a provider's channel);
// - the matched row is locked (FOR UPDATE) before anything is compared or checked, so checks
//   that other rows depend on (references, src/db/references.ts) see a row nobody else changes;
// - an update that changes nothing (compared structurally) writes nothing: `updatedAt` stays;
// - two first PUTs of one key at once both succeed: the one whose insert loses the race rolls
//   back to its savepoint, runs again and finds the other's row (then updates it, or finds it
//   unchanged);
// - the caller owns the transaction (a PUT route opens one, `apply` one for all its resources)
//   and learns what was done: created, updated or unchanged.
// - a key that belongs to another row (a rename onto a taken name, an id-keyed create whose name
//   is taken) is a 409.
import { isDeepStrictEqual } from "node:util";
import { Prisma } from "../generated/prisma/client.ts";
import { ApiError } from "../lib/errors.ts";
import type { PrismaClient } from "./client.ts";
import { isUniqueViolation } from "./errors.ts";
import { ident, prismaExecute, prismaRows, type Sql, sql } from "./sql.ts";

export type Tx = Prisma.TransactionClient;

export type UpsertAction = "created" | "updated" | "unchanged";

/** What an upsert stored (`value`, in the form the caller wants) and what it did. */
export interface Upserted<T> {
  value: T;
  action: UpsertAction;
}

/** Runs one upsert in a transaction of its own (a PUT route) and answers with what it stored. */
export async function upsertAlone<T>(prisma: PrismaClient, work: (tx: Tx) => Promise<Upserted<T>>): Promise<T> {
  return (await prisma.$transaction(work)).value;
}

/** Tables PUT upserts into; each has (workspace_id, id) as its primary key. */
export type UpsertTable = "segments" | "message_templates" | "subscription_groups" | "channel_providers" | "journeys";

/** What is about to be written: a new row, or the changes to a stored one. */
export type Write<Row, Create, Update> = { existing: null; create: Create } | { existing: Row; update: Update };

export interface UpsertSpec<Row, Create, Update> {
  table: UpsertTable;
  workspaceId: string;
  /** The request's `id`: when given it is the key. */
  id: string | undefined;
  /** The other key, a condition on the table, e.g. sql`name = ${name}` (db/sql.ts). */
  key: Sql;
  /** Reads the (locked) row with this id. */
  read(tx: Tx, id: string): Promise<Row | null>;
  /** The row to create when none matches. May throw (a 400). */
  toCreate(): Create;
  /** What an update changes, compared structurally with the stored row; null when nothing does. May throw (a 400). */
  changes(existing: Row): Update | null;
  /** Checks that read other rows, in the transaction and before the write (lock what they rely on). Throws an ApiError. */
  validate?(tx: Tx, write: Write<Row, Create, Update>): Promise<void>;
  insert(tx: Tx, data: Create, now: Date): Promise<Row>;
  update(tx: Tx, existing: Row, data: Update, now: Date): Promise<Row>;
  /** After the write, in the same transaction (e.g. storing what the row references). */
  afterWrite?(tx: Tx, row: Row, write: Write<Row, Create, Update>): Promise<void>;
  /** The 409 for a key (name, channel) that belongs to another row. */
  keyTaken(): ApiError;
}

/**
 * The structural comparison every upsert uses to tell a change: equal as JSON (the form the
 * database keeps), so key order and properties set to `undefined` do not count.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  const normal = (v: unknown) => (v === undefined ? null : JSON.parse(JSON.stringify(v)));
  return isDeepStrictEqual(normal(a), normal(b));
}

/** A JSON column's value for Prisma: null stores SQL NULL, undefined leaves the column as it is. */
export const jsonColumn = (value: unknown) => (value === null ? Prisma.DbNull : (value as Prisma.InputJsonValue));

/**
 * The resource's 409, saying what to do. A name is the usual key: an `id` that matches nothing
 * while another resource holds the name (a file written for another workspace, or an id made up),
 * or a rename onto a taken name. (A provider's channel key says it itself.)
 */
function keyTaken<Row, Create, Update>(spec: UpsertSpec<Row, Create, Update>, when: "create" | "rename"): ApiError {
  const err = spec.keyTaken();
  if (spec.table === "channel_providers") return err;
  const hint =
    when === "create"
      ? `; the request's \`id\` is not that one's: drop \`id\` to update it, or choose another name`
      : "; choose another name, or rename or delete that one first";
  return new ApiError(err.code, `${err.message}${hint}`, err.issues, err.headers);
}

/** The insert of this attempt lost a race on a unique key: roll back to the savepoint and run again. */
class InsertRaced extends Error {}

/** Upserts in the caller's transaction `tx`; the value is the stored row. */
export async function upsert<Row, Create, Update>(tx: Tx, spec: UpsertSpec<Row, Create, Update>): Promise<Upserted<Row>> {
  await prismaExecute(tx, sql`SAVEPOINT upsert_attempt`);
  try {
    const done = await upsertOnce(tx, spec, false);
    await prismaExecute(tx, sql`RELEASE SAVEPOINT upsert_attempt`);
    return done;
  } catch (err) {
    await prismaExecute(tx, sql`ROLLBACK TO SAVEPOINT upsert_attempt`);
    await prismaExecute(tx, sql`RELEASE SAVEPOINT upsert_attempt`);
    if (!(err instanceof InsertRaced)) throw err;
    // Another PUT inserted the key just before us (its commit ended our insert's wait): this
    // attempt's statements see its row. (Lost a second time, the key belongs to a row this
    // request does not name: upsertOnce answers 409.)
    return upsertOnce(tx, spec, true);
  }
}

async function upsertOnce<Row, Create, Update>(tx: Tx, spec: UpsertSpec<Row, Create, Update>, raced: boolean): Promise<Upserted<Row>> {
  const where = spec.id === undefined ? spec.key : sql`id = ${spec.id}::uuid`;
  const locked = await prismaRows<{ id: string }>(
    tx,
    sql`SELECT id::text FROM ${ident(spec.table)} WHERE workspace_id = ${spec.workspaceId}::uuid AND ${where} FOR UPDATE`,
  );
  const existing = locked[0] ? await spec.read(tx, locked[0].id) : null;
  if (!existing) return { value: await create(tx, spec, raced), action: "created" };
  const update = spec.changes(existing);
  if (update === null) return { value: existing, action: "unchanged" };
  const write = { existing, update };
  await spec.validate?.(tx, write);
  let row: Row;
  try {
    row = await spec.update(tx, existing, update, new Date());
  } catch (err) {
    if (isUniqueViolation(err)) throw keyTaken(spec, "rename");
    throw err;
  }
  await spec.afterWrite?.(tx, row, write);
  return { value: row, action: "updated" };
}

async function create<Row, Create, Update>(tx: Tx, spec: UpsertSpec<Row, Create, Update>, raced: boolean): Promise<Row> {
  const write = { existing: null, create: spec.toCreate() } as const;
  await spec.validate?.(tx, write);
  let row: Row;
  try {
    row = await spec.insert(tx, write.create, new Date());
  } catch (err) {
    if (isUniqueViolation(err)) throw raced ? keyTaken(spec, "create") : new InsertRaced();
    throw err;
  }
  await spec.afterWrite?.(tx, row, write);
  return row;
}
