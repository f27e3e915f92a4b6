// Signed, expiring unsubscribe links carried by messages: `<payload>.<mac>` where payload is the
// base64url JSON {workspaceId, userId, subscriptionGroupId?, exp} and mac its HMAC-SHA256 under a
// key derived from TIDINGS_SECRET_KEY. The link works without any API key, so the MAC is all
// that stops one user from unsubscribing another. Links are signed with the current key and
// verified with TIDINGS_SECRET_KEY_PREVIOUS too, so mail sent before a key rotation keeps working.
import { createHmac, timingSafeEqual } from "node:crypto";
import { z } from "zod";
import { deriveKey } from "../lib/secrets.ts";

/** Long enough for an email read months later (CAN-SPAM wants links to work ≥ 30 days). */
export const DEFAULT_UNSUBSCRIBE_TTL_MS = 365 * 24 * 3600 * 1000;
export const UNSUBSCRIBE_PATH = "/api/public/subscriptions/unsubscribe";

const Payload = z.strictObject({
  workspaceId: z.string().min(1),
  userId: z.string().min(1),
  subscriptionGroupId: z.string().min(1).optional(),
  exp: z.number().int().describe("Expiry, ms since epoch."),
});
export type UnsubscribePayload = z.infer<typeof Payload>;

export type VerifiedUnsubscribeToken =
  | { ok: true; payload: UnsubscribePayload }
  | { ok: false; reason: "malformed" | "signature" | "expired" };

const keys = new Map<string, Buffer>();
function macKey(secretKey: string): Buffer {
  let key = keys.get(secretKey);
  if (!key) {
    key = deriveKey(secretKey, "unsubscribe-token/v1");
    keys.set(secretKey, key);
  }
  return key;
}

const mac = (secretKey: string, payload: string) => createHmac("sha256", macKey(secretKey)).update(payload).digest();

export function signUnsubscribeToken(
  secretKey: string,
  subject: { workspaceId: string; userId: string; subscriptionGroupId?: string | undefined },
  options: { now?: number; ttlMs?: number } = {},
): string {
  const payload: UnsubscribePayload = {
    workspaceId: subject.workspaceId,
    userId: subject.userId,
    ...(subject.subscriptionGroupId ? { subscriptionGroupId: subject.subscriptionGroupId } : {}),
    exp: (options.now ?? Date.now()) + (options.ttlMs ?? DEFAULT_UNSUBSCRIBE_TTL_MS),
  };
  const encoded = Buffer.from(JSON.stringify(payload)).toString("base64url");
  return `${encoded}.${mac(secretKey, encoded).toString("base64url")}`;
}

/** The keys a token may be signed with: the server's secret key, and the one it replaced while links signed with it are around. */
export interface UnsubscribeKeys {
  secretKey: string;
  previousSecretKey?: string | undefined;
}

export function verifyUnsubscribeToken(keys: UnsubscribeKeys, token: string, now = Date.now()): VerifiedUnsubscribeToken {
  const [encoded, signature, ...rest] = token.split(".");
  if (!encoded || !signature || rest.length > 0) return { ok: false, reason: "malformed" };
  const given = Buffer.from(signature, "base64url");
  const signedWith = (secretKey: string) => {
    const expected = mac(secretKey, encoded);
    return given.length === expected.length && timingSafeEqual(given, expected);
  };
  if (!signedWith(keys.secretKey) && !(keys.previousSecretKey && signedWith(keys.previousSecretKey))) {
    return { ok: false, reason: "signature" };
  }
  let parsed: z.ZodSafeParseResult<UnsubscribePayload>;
  try {
    parsed = Payload.safeParse(JSON.parse(Buffer.from(encoded, "base64url").toString("utf8")));
  } catch {
    return { ok: false, reason: "malformed" };
  }
  if (!parsed.success) return { ok: false, reason: "malformed" };
  if (parsed.data.exp <= now) return { ok: false, reason: "expired" };
  return { ok: true, payload: parsed.data };
}

/** The public link for a token, on the server's base URL (scheme, host and port). */
export function unsubscribeUrl(baseUrl: string, token: string): string {
  // Appended, not resolved: a public URL with a path (behind a proxy) keeps it.
  const url = new URL(`${baseUrl.replace(/\/+$/, "")}${UNSUBSCRIBE_PATH}`);
  url.searchParams.set("token", token);
  return url.toString();
}
