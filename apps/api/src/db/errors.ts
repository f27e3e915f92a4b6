// Database errors we act on, named: Prisma's codes, the ways pg, Prisma's pg adapter and the
// socket say that PostgreSQL cannot be reached right now, and the SQLSTATEs of a server that is up
// but cannot take the work (read-only, out of disk or memory).
import { Prisma } from "../generated/prisma/client.ts";

/** A unique constraint refused the write (e.g. a name already taken). */
export const isUniqueViolation = (err: unknown): boolean => err instanceof Prisma.PrismaClientKnownRequestError && err.code === "P2002";

/** Socket errors of a connection to PostgreSQL that cannot be made or was cut. */
const SOCKET_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN"]);
/**
 * SQLSTATEs of a server going away or not taking connections: admin_shutdown (57P01, a stop or
 * restart), crash_shutdown (57P02), cannot_connect_now (57P03, starting up or shutting down),
 * too_many_connections (53300); class 08 (connection exception) is matched as a class.
 */
const SQLSTATES = new Set(["57P01", "57P02", "57P03", "53300"]);
/**
 * Prisma's: can't reach the server (P1001), timed out reaching it (P1002), socket timeout (P1008),
 * server closed the connection (P1017), pool timeout (P2024), too many connections (P2037).
 */
const PRISMA_CODES = new Set(["P1001", "P1002", "P1008", "P1017", "P2024", "P2037"]);
/** The kinds @prisma/adapter-pg gives the same conditions (in `meta.driverAdapterError.cause`). */
const ADAPTER_KINDS = new Set(["DatabaseNotReachable", "ConnectionClosed", "SocketTimeout", "TooManyConnections"]);
/**
 * pg's own messages, which carry no code: the server closed the socket, a client that lost its
 * connection was used again, the pool's `connectionTimeoutMillis` ran out.
 */
const MESSAGES = /Connection terminated|not queryable|timeout exceeded when trying to connect/;

/**
 * Whether `err` says PostgreSQL is unreachable (stopped, restarting, cut off, out of connections)
 * rather than that the request or the statement is wrong: the request may succeed if retried
 * later. Reads pg's and the socket's errors as thrown, and Prisma's through the driver error it
 * wraps; not generic `cause` chains, where a refused connection may be another service's (an
 * HTTP client's `fetch failed`).
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (err === null || typeof err !== "object") return false;
  const { code, message, meta } = err as { code?: unknown; message?: unknown; meta?: { driverAdapterError?: { cause?: unknown } } };
  if (typeof code === "string" && (SOCKET_CODES.has(code) || isUnavailableSqlState(code) || PRISMA_CODES.has(code))) return true;
  if (typeof message === "string" && MESSAGES.test(message)) return true;
  // Node reports a refused connection to each address of a host name as an AggregateError.
  if (err instanceof AggregateError) return err.errors.some(isDatabaseUnavailable);
  const adapter = meta?.driverAdapterError?.cause as { kind?: unknown; originalCode?: unknown; originalMessage?: unknown } | undefined;
  if (!adapter) return false;
  return (
    (typeof adapter.kind === "string" && ADAPTER_KINDS.has(adapter.kind)) ||
    (typeof adapter.originalCode === "string" && isUnavailableSqlState(adapter.originalCode)) ||
    (typeof adapter.originalMessage === "string" && MESSAGES.test(adapter.originalMessage))
  );
}

const isUnavailableSqlState = (code: string) => SQLSTATES.has(code) || /^08[0-9A-Z]{3}$/.test(code);

/**
 * SQLSTATEs of a server that is up but cannot do the work now, a state that clears without the
 * request changing: read_only_sql_transaction (25006: a standby, or `default_transaction_read_only`
 * turned on, as a failover or a disk-full guard does), insufficient_resources (53000), disk_full
 * (53100), out_of_memory (53200), too_many_connections (53300).
 */
const REFUSING_SQLSTATES = new Set(["25006", "53000", "53100", "53200", "53300"]);

/** The SQLSTATE of a PostgreSQL error as pg throws it, or as Prisma wraps it (through @prisma/adapter-pg). */
function sqlState(err: object): string | undefined {
  const { code, meta } = err as { code?: unknown; meta?: { code?: unknown; driverAdapterError?: { cause?: { originalCode?: unknown } } } };
  for (const c of [meta?.driverAdapterError?.cause?.originalCode, meta?.code, code])
    if (typeof c === "string" && /^[0-9A-Z]{5}$/.test(c)) return c;
  return undefined;
}

/**
 * Whether `err` says PostgreSQL refuses the work for now — read-only, out of disk, memory or
 * connections — rather than that the request or the statement is wrong: like an unreachable
 * database, the request may succeed if sent again once an operator (or a failover) clears it.
 */
export function isDatabaseRefusing(err: unknown): boolean {
  if (err === null || typeof err !== "object") return false;
  const state = sqlState(err);
  return state !== undefined && REFUSING_SQLSTATES.has(state);
}
