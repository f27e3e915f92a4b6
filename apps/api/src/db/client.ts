// Database handles: one pg pool shared by Prisma (everything but hot paths) and raw SQL
// (ingestion and other bulk paths).
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { PrismaClient } from "../generated/prisma/client.ts";

export type { PrismaClient };

export interface Db {
  pool: pg.Pool;
  prisma: PrismaClient;
  close(): Promise<void>;
}

export function createDb(databaseUrl: string, poolSize = 10): Db {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: poolSize, idleTimeoutMillis: 30_000 });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on("error", () => {});
  // Nor may a checked-out one (the segment engine's, a transaction's): pg emits 'error' on the
  // client itself when the server goes away between statements or ends the session (a restart,
  // 57P01). The holder learns of it from its next statement, which fails; the pool then drops the
  // connection when it is released (release(err), or not queryable any more).
  pool.on("connect", (client) => client.on("error", () => {}));
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  return {
    pool,
    prisma,
    async close() {
      await prisma.$disconnect();
      await pool.end();
    },
  };
}
