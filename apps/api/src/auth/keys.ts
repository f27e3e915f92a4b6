// Admin and write keys: generation, hashing and lookup. Keys are random 256-bit secrets, so a
// plain SHA-256 is a safe, fast hash; the plaintext is returned once and never stored.
import { hash as digest, randomBytes, timingSafeEqual } from "node:crypto";
import type { ApiKeyKind, ApiKeyResource } from "@tidings/schema";
import type { PrismaClient } from "../db/client.ts";

const prefixes: Record<ApiKeyKind, string> = { Admin: "tda_", Write: "tdw_" };
const KEY_RE = /^td[aw]_[A-Za-z0-9_-]{43}$/;

export function generateKey(kind: ApiKeyKind): string {
  return prefixes[kind] + randomBytes(32).toString("base64url");
}

export function hashKey(key: string): string {
  return digest("sha256", key, "hex");
}

export function looksLikeKey(value: string, kind?: ApiKeyKind): boolean {
  return KEY_RE.test(value) && (kind === undefined || value.startsWith(prefixes[kind]));
}

/** Constant-time comparison of two secrets of any length. */
export function secretsEqual(a: string, b: string): boolean {
  return timingSafeEqual(digest("sha256", a, "buffer"), digest("sha256", b, "buffer"));
}

export interface KeyPrincipal {
  keyId: string;
  workspaceId: string;
  kind: ApiKeyKind;
}

interface CacheEntry {
  principal: KeyPrincipal;
  expiresAt: number;
}

const MAX_CACHE_ENTRIES = 10_000;

/**
 * Resolves keys to principals. Found keys are trusted for `cacheSeconds` (a revoke through this
 * process takes effect at once; on other replicas within `cacheSeconds`), so the ingestion hot
 * path does not query the database per request. Unknown keys are never cached. The cache is keyed
 * by the key itself, so a hit costs no hashing: it lives only in this process's memory, as the key
 * does in every request that carries it; the database holds only hashes.
 */
export class KeyStore {
  private cache = new Map<string, CacheEntry>();
  constructor(
    private prisma: PrismaClient,
    private cacheSeconds: number,
  ) {}

  /** The principal of a key found within `cacheSeconds`, without I/O; undefined when not cached. */
  cached(key: string, kind: ApiKeyKind): KeyPrincipal | undefined {
    const hit = this.cache.get(key);
    return hit && hit.expiresAt > Date.now() && hit.principal.kind === kind ? hit.principal : undefined;
  }

  async lookup(key: string, kind: ApiKeyKind): Promise<KeyPrincipal | null> {
    const hit = this.cached(key, kind);
    if (hit) return hit;
    if (!looksLikeKey(key, kind)) return null;
    const row = await this.prisma.apiKey.findUnique({
      where: { hash: hashKey(key) },
      select: { id: true, workspaceId: true, kind: true, revokedAt: true },
    });
    if (!row || row.revokedAt || row.kind !== kind) {
      this.cache.delete(key);
      return null;
    }
    const principal = { keyId: row.id, workspaceId: row.workspaceId, kind: row.kind };
    if (this.cacheSeconds > 0) {
      if (this.cache.size >= MAX_CACHE_ENTRIES) this.cache.clear();
      this.cache.set(key, { principal, expiresAt: Date.now() + this.cacheSeconds * 1000 });
    }
    return principal;
  }

  /** Forgets cached keys of a revoked key id. */
  forget(keyId: string) {
    for (const [key, entry] of this.cache) if (entry.principal.keyId === keyId) this.cache.delete(key);
  }
}

type ApiKeyRow = {
  id: string;
  workspaceId: string;
  kind: ApiKeyKind;
  name: string | null;
  prefix: string;
  createdAt: Date;
  revokedAt: Date | null;
};

export function toApiKeyResource(row: ApiKeyRow): ApiKeyResource {
  return {
    id: row.id,
    workspaceId: row.workspaceId,
    kind: row.kind,
    name: row.name,
    prefix: row.prefix,
    createdAt: row.createdAt.getTime(),
    revokedAt: row.revokedAt ? row.revokedAt.getTime() : null,
  };
}

/** Data for a new key row, plus the plaintext key to show once. */
export function newKeyRow(kind: ApiKeyKind, name?: string | null) {
  const key = generateKey(kind);
  return { key, data: { kind, name: name ?? null, hash: hashKey(key), prefix: key.slice(0, 10) } };
}
