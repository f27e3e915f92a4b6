// A double of Google's OAuth token endpoint and of the FCM HTTP v1 send API.
//
// POST /token checks the JWT bearer grant as Google documents it for service accounts:
// grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer, `assertion` a JWT with header
// alg RS256 whose signature verifies against the service account's public key, claims
// iss = client_email, scope including firebase.messaging, aud = this token endpoint, iat not in
// the future, exp after now and at most one hour after iat. It answers
// {access_token, expires_in, token_type: "Bearer"} or {error: "invalid_grant", error_description}.
//
// POST /v1/projects/{projectId}/messages:send checks the bearer token (issued here, unexpired,
// not revoked), a JSON body {message} with exactly one target (token/topic/condition), string
// notification fields and a string-to-string data map, and answers {name} or a google.rpc
// error {error: {code, message, status, details: [{@type: …FcmError, errorCode}]}}.
import { randomBytes, verify, type KeyObject } from "node:crypto";
import { DoubleServer, mediaType, type RecordedRequest, type Reply } from "./server.ts";

export const FCM_SCOPE = "https://www.googleapis.com/auth/firebase.messaging";
const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";

export interface FcmDoubleOptions {
  projectId: string;
  /** Service accounts known to the token endpoint: client_email → public key. */
  accounts: Map<string, KeyObject>;
  /** Lifetime of issued access tokens, in seconds (default 3600). */
  expiresIn?: number;
}

export interface TokenExchange {
  header: Record<string, unknown>;
  claims: Record<string, unknown>;
  accessToken: string;
}

export interface ReceivedPush {
  accessToken: string;
  clientEmail: string;
  message: {
    token?: string;
    notification?: { title?: string; body?: string; image?: string };
    data?: Record<string, string>;
  };
  name: string;
}

export function googleError(code: number, status: string, message: string, fcmErrorCode?: string): Reply {
  const details = fcmErrorCode ? [{ "@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", errorCode: fcmErrorCode }] : [];
  return { status: code, body: { error: { code, message, status, details } } };
}

const invalidGrant = (description: string): Reply => ({
  status: 400,
  body: { error: "invalid_grant", error_description: description },
});

export class FcmDouble extends DoubleServer {
  readonly exchanges: TokenExchange[] = [];
  readonly pushes: ReceivedPush[] = [];
  /** Registration tokens that answer 404 UNREGISTERED. */
  readonly unregistered = new Set<string>();
  /** Registration tokens that answer 400 INVALID_ARGUMENT. */
  readonly invalid = new Set<string>();
  /** When set, the send endpoint refuses every bearer token with 401. */
  refuseAllTokens = false;
  private readonly issued = new Map<string, { clientEmail: string; expiresAt: number }>();

  constructor(readonly options: FcmDoubleOptions) {
    super((req) => this.answer(req));
  }

  get tokenUri(): string {
    return `${this.url}/token`;
  }

  /** Invalidates every issued access token (as if revoked or expired early). */
  revokeTokens(): void {
    this.issued.clear();
  }

  private answer(req: RecordedRequest): Reply {
    if (req.method === "POST" && req.path === "/token") return this.token(req);
    const send = /^\/v1\/projects\/([^/]+)\/messages:send$/.exec(req.path);
    if (req.method === "POST" && send) return this.send(req, decodeURIComponent(send[1]!));
    return googleError(404, "NOT_FOUND", `${req.method} ${req.path} is not an endpoint of this double`);
  }

  private token(req: RecordedRequest): Reply {
    if (mediaType(req.headers["content-type"]) !== "application/x-www-form-urlencoded") {
      return { status: 400, body: { error: "invalid_request", error_description: "form-encoded body required" } };
    }
    const form = new URLSearchParams(req.body);
    if (form.get("grant_type") !== JWT_BEARER) {
      return { status: 400, body: { error: "unsupported_grant_type", error_description: `Invalid grant_type: ${form.get("grant_type")}` } };
    }
    const parts = (form.get("assertion") ?? "").split(".");
    if (parts.length !== 3) return invalidGrant("assertion is not a JWT");
    let header: Record<string, unknown>;
    let claims: Record<string, unknown>;
    try {
      header = JSON.parse(Buffer.from(parts[0]!, "base64url").toString("utf8"));
      claims = JSON.parse(Buffer.from(parts[1]!, "base64url").toString("utf8"));
    } catch {
      return invalidGrant("JWT header or claims are not base64url JSON");
    }
    if (header.alg !== "RS256") return invalidGrant(`alg must be RS256, got ${String(header.alg)}`);
    const iss = claims.iss;
    const key = typeof iss === "string" ? this.options.accounts.get(iss) : undefined;
    if (!key) return invalidGrant(`Invalid issuer: ${String(iss)}`);
    const signed = verify("RSA-SHA256", Buffer.from(`${parts[0]}.${parts[1]}`), key, Buffer.from(parts[2]!, "base64url"));
    if (!signed) return invalidGrant("Invalid JWT Signature.");
    if (claims.aud !== this.tokenUri) return invalidGrant(`Invalid JWT: aud must be ${this.tokenUri}, got ${String(claims.aud)}`);
    const scopes = typeof claims.scope === "string" ? claims.scope.split(" ") : [];
    if (!scopes.includes(FCM_SCOPE)) return invalidGrant(`scope must include ${FCM_SCOPE}`);
    const now = Math.floor(Date.now() / 1000);
    const { iat, exp } = claims;
    if (typeof iat !== "number" || typeof exp !== "number") return invalidGrant("iat and exp must be numbers");
    if (iat > now + 60) return invalidGrant("Invalid JWT: iat is in the future");
    if (exp <= now) return invalidGrant("Invalid JWT: Token must be a short-lived token and in a reasonable timeframe");
    if (exp - iat > 3600) return invalidGrant("Invalid JWT: exp is more than one hour after iat");

    const accessToken = `ya29.${randomBytes(24).toString("base64url")}`;
    const expiresIn = this.options.expiresIn ?? 3600;
    this.issued.set(accessToken, { clientEmail: iss as string, expiresAt: Date.now() + expiresIn * 1000 });
    this.exchanges.push({ header, claims, accessToken });
    return { status: 200, body: { access_token: accessToken, expires_in: expiresIn, token_type: "Bearer" } };
  }

  private send(req: RecordedRequest, projectId: string): Reply {
    const bearer = /^Bearer (\S+)$/.exec(req.headers.authorization ?? "")?.[1];
    const grant = bearer ? this.issued.get(bearer) : undefined;
    if (!bearer || !grant || grant.expiresAt <= Date.now() || this.refuseAllTokens) {
      return googleError(
        401,
        "UNAUTHENTICATED",
        "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
      );
    }
    if (projectId !== this.options.projectId) {
      return googleError(
        403,
        "PERMISSION_DENIED",
        `Permission 'cloudmessaging.messages.create' denied on resource '//fcm.googleapis.com/projects/${projectId}'`,
      );
    }
    if (mediaType(req.headers["content-type"]) !== "application/json") {
      return googleError(400, "INVALID_ARGUMENT", "Content-Type must be application/json");
    }
    let body: unknown;
    try {
      body = JSON.parse(req.body);
    } catch {
      return googleError(400, "INVALID_ARGUMENT", "Invalid JSON payload received.");
    }
    const problem = checkSendBody(body);
    if (problem) return googleError(400, "INVALID_ARGUMENT", problem, "INVALID_ARGUMENT");
    const message = (body as { message: ReceivedPush["message"] }).message;
    if (message.token && this.unregistered.has(message.token)) {
      return googleError(404, "NOT_FOUND", "Requested entity was not found.", "UNREGISTERED");
    }
    if (message.token && this.invalid.has(message.token)) {
      return googleError(400, "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token", "INVALID_ARGUMENT");
    }
    const name = `projects/${projectId}/messages/0:${Date.now()}%${randomBytes(8).toString("hex")}`;
    this.pushes.push({ accessToken: bearer, clientEmail: grant.clientEmail, message, name });
    return { status: 200, body: { name } };
  }
}

/** What FCM's v1 API refuses in a send body; undefined when it is acceptable. */
function checkSendBody(body: unknown): string | undefined {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return "body must be an object";
  const unknownTop = Object.keys(body).filter((k) => k !== "message" && k !== "validate_only");
  if (unknownTop.length) return `Invalid JSON payload received. Unknown name "${unknownTop[0]}": Cannot find field.`;
  const message = (body as { message?: unknown }).message;
  if (typeof message !== "object" || message === null) return "message is required";
  const m = message as Record<string, unknown>;
  const known = ["name", "data", "notification", "android", "webpush", "apns", "fcm_options", "token", "topic", "condition"];
  const unknownField = Object.keys(m).find((k) => !known.includes(k));
  if (unknownField) return `Invalid JSON payload received. Unknown name "${unknownField}" at 'message': Cannot find field.`;
  const targets = ["token", "topic", "condition"].filter((k) => m[k] !== undefined);
  if (targets.length !== 1) return "Exactly one of token, topic or condition must be specified";
  if (typeof m[targets[0]!] !== "string" || !m[targets[0]!]) return `${targets[0]} must be a non-empty string`;
  if (m.notification !== undefined) {
    if (typeof m.notification !== "object" || m.notification === null) return "notification must be an object";
    for (const [k, v] of Object.entries(m.notification)) {
      if (!["title", "body", "image"].includes(k)) return `Unknown name "${k}" at 'message.notification'`;
      if (typeof v !== "string") return `message.notification.${k} must be a string`;
    }
  }
  if (m.data !== undefined) {
    if (typeof m.data !== "object" || m.data === null || Array.isArray(m.data)) return "message.data must be a map";
    for (const [k, v] of Object.entries(m.data)) {
      if (typeof v !== "string") return `Invalid value at 'message.data[${k}]' (TYPE_STRING)`;
    }
  }
  return undefined;
}
