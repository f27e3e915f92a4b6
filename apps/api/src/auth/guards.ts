// Request guards: the write key of ingestion, the admin and root keys of the admin API (applied
// per route by admin-plugin.ts, which also resolves the workspace).
import type { FastifyReply, FastifyRequest } from "fastify";
import { ApiError } from "../lib/errors.ts";
import { type KeyPrincipal, type KeyStore, looksLikeKey, secretsEqual } from "./keys.ts";

declare module "fastify" {
  interface FastifyRequest {
    principal?: KeyPrincipal;
  }
}

const unauthorized = (message: string) => new ApiError("UNAUTHORIZED", message);

function decodeBase64(value: string): string | null {
  if (!/^[A-Za-z0-9+/=_-]+$/.test(value)) return null;
  return Buffer.from(value, "base64").toString("utf8");
}

/**
 * The write key named by an Authorization header value. Accepted forms: `Basic <key>`,
 * `Basic base64(<key>:)`, `Basic base64(<key>)`, `Bearer <key>`, and a bare key (Dittofeed's
 * SDK sends its writeKey setting verbatim).
 */
export function writeKeyFromAuthorization(header: string): string | null {
  const [scheme = "", ...rest] = header.trim().split(/\s+/);
  const value = rest.join(" ");
  if (/^bearer$/i.test(scheme)) return value || null;
  if (/^basic$/i.test(scheme)) {
    if (looksLikeKey(value)) return value;
    const decoded = decodeBase64(value);
    if (decoded === null) return value;
    const user = decoded.endsWith(":") ? decoded.slice(0, -1) : (decoded.split(":")[0] ?? "");
    return user || value;
  }
  return rest.length === 0 ? scheme || null : null;
}

function headerValue(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** The write key a public request names (header forms, PublicWriteKey, or `writeKey` in the body). */
function writeKeyOf(request: FastifyRequest): string {
  const auth = headerValue(request, "authorization");
  const publicKey = headerValue(request, "publicwritekey")?.trim();
  const body = request.body as { writeKey?: unknown } | undefined;
  const fromBody = body && typeof body === "object" && typeof body.writeKey === "string" ? body.writeKey : undefined;
  let fromAuth = auth ? writeKeyFromAuthorization(auth) : null;
  // Segment's OAuth mode sends `Bearer <access token>` with the write key in the body; we do
  // not issue such tokens, so the body's key decides.
  if (fromAuth && fromBody && /^bearer\s/i.test(auth!) && !looksLikeKey(fromAuth)) fromAuth = null;
  else if (auth && !fromAuth) throw unauthorized("Unrecognised Authorization header; send the write key as `Basic <key>`");
  if (fromAuth && publicKey && fromAuth !== publicKey) {
    throw unauthorized("PublicWriteKey and Authorization name different keys");
  }
  const key = fromAuth ?? publicKey ?? fromBody;
  if (!key) throw unauthorized("A write key is required (Authorization: Basic <key>, PublicWriteKey or writeKey)");
  return key;
}

/** Callback style: a key this process has already seen costs no promise on the ingestion hot path. */
export function writeKeyGuard(keys: KeyStore) {
  return function requireWriteKey(request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) {
    let key: string;
    try {
      key = writeKeyOf(request);
    } catch (err) {
      return done(err as Error);
    }
    const cached = keys.cached(key, "Write");
    if (cached) {
      request.principal = cached;
      return done();
    }
    keys.lookup(key, "Write").then((principal) => {
      if (!principal) return done(unauthorized("Unknown or revoked write key"));
      request.principal = principal;
      done();
    }, done);
  };
}

function bearer(request: FastifyRequest): string | null {
  const auth = headerValue(request, "authorization");
  const m = auth?.match(/^Bearer\s+(\S+)\s*$/i);
  return m?.[1] ?? null;
}

export function adminGuard(keys: KeyStore) {
  return async function requireAdminKey(request: FastifyRequest, _reply: FastifyReply) {
    const key = bearer(request);
    if (!key) throw unauthorized("An admin API key is required: Authorization: Bearer <key>");
    const principal = await keys.lookup(key, "Admin");
    if (!principal) throw unauthorized("Unknown or revoked admin API key (write keys cannot call admin routes)");
    request.principal = principal;
  };
}

export function rootGuard(rootKey: string) {
  return async function requireRootKey(request: FastifyRequest, _reply: FastifyReply) {
    const key = bearer(request);
    if (!key || !secretsEqual(key, rootKey)) throw unauthorized("The root key is required: Authorization: Bearer <root key>");
  };
}
