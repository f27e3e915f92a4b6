// Prisma's error codes we act on, named.
import { Prisma } from "../generated/prisma/client.ts";

/** A unique constraint refused the write (e.g. a name already taken). */
export const isUniqueViolation = (err: unknown): boolean => err instanceof Prisma.PrismaClientKnownRequestError && err.code === "P2002";
