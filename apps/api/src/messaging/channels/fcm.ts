// Push through Firebase Cloud Messaging's HTTP v1 API.
//
// Auth (OAuth 2.0 for service accounts, RFC 7523 JWT bearer grant): a JWT signed RS256 with the
// service account's private key — iss = client_email, scope = firebase.messaging,
// aud = token_uri, iat, exp ≤ iat + 1 h — is posted as `assertion` with
// grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer to the key file's `token_uri`; the answer
// {access_token, expires_in} is cached per service account until shortly before it expires.
//
// Send: POST {baseUrl}/v1/projects/{projectId}/messages:send, Authorization: Bearer <token>,
// body {message: {token, notification: {title, body, image?}, data?}} → {name}.
// Errors: {error: {code, message, status, details: [{@type: …FcmError, errorCode}]}}.
import { createHash, createPrivateKey, sign, type KeyObject } from "node:crypto";
import type { FcmConfig } from "@tidings/schema";
import type { OutboundGuard } from "../../outbound/index.ts";
import { clip, DEFAULT_TIMEOUT_MS, isTransientStatus, joinUrl, noAnswerOutcome, ProviderHttp, transient } from "./provider-http.ts";
import { sendEach } from "./send-each.ts";
import type { ChannelSender, MayGo, OutgoingMessage, PermanentFailure, PushRendered, SendOutcome, TransientFailure } from "./types.ts";

export const FCM_DEFAULT_BASE_URL = "https://fcm.googleapis.com";
export const FCM_SCOPE = "https://www.googleapis.com/auth/firebase.messaging";
/** Google's token endpoint, used when a key file has no `token_uri`. */
export const GOOGLE_TOKEN_URI = "https://oauth2.googleapis.com/token";
export const JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/** Lifetime of the signed assertion (Google accepts at most one hour). */
const ASSERTION_LIFETIME_S = 3600;

export interface FcmSenderOptions {
  /** Every destination (the base URL, the key file's `token_uri`) goes through it. */
  guard: OutboundGuard;
  /** Requests in flight at once per `send` call (default 8). */
  concurrency?: number;
  /** Deadline of one request, answer body included (default 15 s). */
  timeoutMs?: number;
  /**
   * An access token is renewed this long before it expires (default 5 min, as Google's client
   * libraries do); never more than half the token's lifetime.
   */
  refreshMarginMs?: number;
}

/** The fields of a service account key file the sender uses. */
export interface ServiceAccount {
  clientEmail: string;
  privateKey: KeyObject;
  privateKeyId?: string;
  tokenUri: string;
  /** Identifies the account and key: the token cache key. */
  cacheKey: string;
}

type TokenResult = { ok: true; token: string } | { ok: false; outcome: PermanentFailure | TransientFailure };
interface CachedToken {
  token: string;
  /** When to fetch a new one (ms since epoch): expiry minus the refresh margin. */
  refreshAt: number;
}

export class FcmSender implements ChannelSender<PushRendered, FcmConfig> {
  private readonly concurrency: number;
  private readonly timeoutMs: number;
  private readonly refreshMarginMs: number;
  private readonly tokens = new Map<string, CachedToken>();
  private readonly pending = new Map<string, Promise<TokenResult>>();
  private readonly http: ProviderHttp;

  constructor(options: FcmSenderOptions) {
    this.concurrency = Math.max(1, options.concurrency ?? 8);
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.refreshMarginMs = options.refreshMarginMs ?? 5 * 60_000;
    this.http = new ProviderHttp(options.guard);
  }

  async send(messages: OutgoingMessage<PushRendered>[], config: FcmConfig, mayGo?: MayGo): Promise<SendOutcome[]> {
    if (messages.length === 0) return [];
    // Tokens are cached per workspace: one workspace's exchange is never another's.
    const account = parseServiceAccount(config.serviceAccountJson, messages[0]!.workspaceId);
    if ("reason" in account) return messages.map(() => ({ status: "failed", reason: `FCM: ${account.reason}` }) as const);

    // One exchange up front: when it fails, every message shares its outcome.
    const first = await this.accessToken(account);
    if (!first.ok) return messages.map(() => first.outcome);

    const url = joinUrl(config.baseUrl ?? FCM_DEFAULT_BASE_URL, `/v1/projects/${encodeURIComponent(config.projectId)}/messages:send`);
    return sendEach(messages, (m) => this.sendOne(m, account, url), this.concurrency, mayGo);
  }

  async close(): Promise<void> {
    this.tokens.clear();
    this.pending.clear();
    await this.http.close();
  }

  private async sendOne(m: OutgoingMessage<PushRendered>, account: ServiceAccount, url: string): Promise<SendOutcome> {
    const notification: Record<string, string> = { title: m.rendered.title, body: m.rendered.body };
    if (m.rendered.imageUrl) notification.image = m.rendered.imageUrl;
    const message: Record<string, unknown> = { token: m.to, notification };
    if (m.rendered.data && Object.keys(m.rendered.data).length > 0) message.data = m.rendered.data;
    const body = JSON.stringify({ message });

    let refreshed = false;
    for (;;) {
      const token = await this.accessToken(account);
      if (!token.ok) return token.outcome;
      const res = await this.http.request(
        url,
        {
          method: "POST",
          headers: {
            authorization: `Bearer ${token.token}`,
            "content-type": "application/json; charset=utf-8",
            accept: "application/json",
          },
          body,
        },
        this.timeoutMs,
      );
      if (!res.ok) return noAnswerOutcome("FCM", res);
      if (res.status >= 200 && res.status < 300) {
        const name = (res.json as { name?: unknown } | undefined)?.name;
        return typeof name === "string" ? { status: "sent", providerMessageId: name } : { status: "sent" };
      }
      const error = readGoogleError(res.status, res.json);
      // 401: the access token was refused (expired or revoked early): renew it once. FCM's
      // THIRD_PARTY_AUTH_ERROR (APNs/web push credentials) is also a 401 but no token will help.
      if (res.status === 401 && error.code !== "THIRD_PARTY_AUTH_ERROR" && !refreshed) {
        refreshed = true;
        this.forget(account, token.token);
        continue;
      }
      const reason = `FCM ${error.code}: ${error.message} (HTTP ${res.status})`;
      return isTransientStatus(res.status) ? transient(reason, res.headers) : { status: "failed", reason };
    }
  }

  /** A valid access token for the account: cached, or one exchange shared by concurrent callers. */
  private accessToken(account: ServiceAccount): Promise<TokenResult> {
    const cached = this.tokens.get(account.cacheKey);
    if (cached && Date.now() < cached.refreshAt) return Promise.resolve({ ok: true, token: cached.token });
    let pending = this.pending.get(account.cacheKey);
    if (!pending) {
      pending = this.exchange(account).finally(() => this.pending.delete(account.cacheKey));
      this.pending.set(account.cacheKey, pending);
    }
    return pending;
  }

  /** Drops the cached token if it is still `token` (another caller may have renewed it already). */
  private forget(account: ServiceAccount, token: string): void {
    if (this.tokens.get(account.cacheKey)?.token === token) this.tokens.delete(account.cacheKey);
  }

  private async exchange(account: ServiceAccount): Promise<TokenResult> {
    const startedAt = Date.now();
    const assertion = signAssertion(account, Math.floor(startedAt / 1000));
    const res = await this.http.request(
      account.tokenUri,
      {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
        body: new URLSearchParams({ grant_type: JWT_BEARER_GRANT, assertion }).toString(),
      },
      this.timeoutMs,
    );
    if (!res.ok) return { ok: false, outcome: noAnswerOutcome("FCM token exchange", res) };
    const body = (res.json ?? {}) as { access_token?: unknown; expires_in?: unknown; error?: unknown; error_description?: unknown };
    if (res.status >= 200 && res.status < 300 && typeof body.access_token === "string" && body.access_token) {
      const expiresInS = Number(body.expires_in ?? 3600);
      const lifetimeMs = Number.isFinite(expiresInS) && expiresInS > 0 ? expiresInS * 1000 : 3600_000;
      const refreshAt = startedAt + lifetimeMs - Math.min(this.refreshMarginMs, lifetimeMs / 2);
      this.tokens.set(account.cacheKey, { token: body.access_token, refreshAt });
      return { ok: true, token: body.access_token };
    }
    const what =
      typeof body.error === "string"
        ? `${clip(body.error, 60)}${typeof body.error_description === "string" ? `: ${clip(body.error_description)}` : ""}`
        : "no access_token in the answer";
    const reason = `FCM token exchange at ${clip(account.tokenUri)} failed: ${what} (HTTP ${res.status})`;
    // 2xx without a token is a broken answer: worth another try, like a 5xx.
    const retry = isTransientStatus(res.status) || (res.status >= 200 && res.status < 300);
    return { ok: false, outcome: retry ? transient(reason, res.headers) : { status: "failed", reason } };
  }
}

/** Reads a service account key file (of `workspaceId`: its token cache key); an error reason when it is unusable. */
export function parseServiceAccount(json: string, workspaceId = ""): ServiceAccount | { reason: string } {
  let raw: Record<string, unknown>;
  try {
    const v: unknown = JSON.parse(json);
    if (typeof v !== "object" || v === null || Array.isArray(v)) return { reason: "service account JSON is not an object" };
    raw = v as Record<string, unknown>;
  } catch {
    return { reason: "service account JSON does not parse" };
  }
  const clientEmail = raw.client_email;
  const pem = raw.private_key;
  if (typeof clientEmail !== "string" || !clientEmail) return { reason: "service account JSON has no client_email" };
  if (typeof pem !== "string" || !pem) return { reason: "service account JSON has no private_key" };
  const tokenUri = typeof raw.token_uri === "string" && raw.token_uri ? raw.token_uri : GOOGLE_TOKEN_URI;
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(pem);
  } catch (err) {
    return { reason: `service account private_key is not a readable PEM key (${(err as Error).message})` };
  }
  if (privateKey.asymmetricKeyType !== "rsa") return { reason: "service account private_key is not an RSA key" };
  const cacheKey = createHash("sha256").update(`${workspaceId}\n${clientEmail}\n${tokenUri}\n${pem}`).digest("base64url");
  const privateKeyId = typeof raw.private_key_id === "string" && raw.private_key_id ? raw.private_key_id : undefined;
  return { clientEmail, privateKey, tokenUri, cacheKey, ...(privateKeyId ? { privateKeyId } : {}) };
}

/** The RS256-signed JWT assertion of the JWT bearer grant. */
export function signAssertion(account: ServiceAccount, nowS: number): string {
  const header = { alg: "RS256", typ: "JWT", ...(account.privateKeyId ? { kid: account.privateKeyId } : {}) };
  const claims = { iss: account.clientEmail, scope: FCM_SCOPE, aud: account.tokenUri, iat: nowS, exp: nowS + ASSERTION_LIFETIME_S };
  const input = `${b64url(header)}.${b64url(claims)}`;
  const signature = sign("RSA-SHA256", Buffer.from(input), account.privateKey).toString("base64url");
  return `${input}.${signature}`;
}

const b64url = (v: unknown) => Buffer.from(JSON.stringify(v), "utf8").toString("base64url");

/** The FCM error code (FcmError.errorCode, else the google.rpc status) and message, from Google's documented error body only. */
function readGoogleError(status: number, json: unknown): { code: string; message: string } {
  const error = (json as { error?: unknown } | undefined)?.error;
  if (typeof error === "object" && error !== null) {
    const e = error as { status?: unknown; message?: unknown; details?: unknown };
    let code = typeof e.status === "string" ? e.status : `HTTP_${status}`;
    if (Array.isArray(e.details)) {
      for (const d of e.details as Array<Record<string, unknown>>) {
        if (typeof d?.["@type"] === "string" && d["@type"].endsWith("FcmError") && typeof d.errorCode === "string") code = d.errorCode;
      }
    }
    return { code: clip(code, 60), message: typeof e.message === "string" ? clip(e.message) : "no message" };
  }
  return { code: `HTTP_${status}`, message: "no error message in the answer" };
}
