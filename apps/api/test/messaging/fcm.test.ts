// FcmSender against a double of Google's token endpoint (verifying the RS256 JWT against the
// service account's public key) and of the FCM HTTP v1 send API.
import { generateKeyPairSync, type KeyObject } from "node:crypto";
import type { FcmConfig } from "@tidings/schema";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { FcmSender } from "../../src/messaging/channels/fcm.ts";
import type { OutgoingMessage, PushRendered } from "../../src/messaging/channels/types.ts";
import { FCM_SCOPE, FcmDouble, googleError } from "./doubles/fcm.ts";
import { deadUrl } from "./doubles/server.ts";
import { loopback } from "../support/outbound.ts";

const PROJECT = "tidings-test";
const EMAIL_A = "sender@tidings-test.iam.gserviceaccount.com";
const EMAIL_B = "other@tidings-test.iam.gserviceaccount.com";

let keyA: { publicKey: KeyObject; privateKey: KeyObject };
let keyB: { publicKey: KeyObject; privateKey: KeyObject };
beforeAll(() => {
  keyA = generateKeyPairSync("rsa", { modulusLength: 2048 });
  keyB = generateKeyPairSync("rsa", { modulusLength: 2048 });
});

let fcm: FcmDouble;
const startDouble = async (expiresIn?: number) => {
  await fcm?.close();
  fcm = await new FcmDouble({
    projectId: PROJECT,
    accounts: new Map([
      [EMAIL_A, keyA.publicKey],
      [EMAIL_B, keyB.publicKey],
    ]),
    ...(expiresIn !== undefined ? { expiresIn } : {}),
  }).start();
};
beforeEach(() => startDouble());
afterEach(async () => {
  await fcm.close();
});

/** A service account key file as Google issues it, its token_uri pointing at the double. */
const serviceAccountJson = (email = EMAIL_A, privateKey = keyA.privateKey, tokenUri = fcm.tokenUri) =>
  JSON.stringify({
    type: "service_account",
    project_id: PROJECT,
    private_key_id: "0123456789abcdef",
    private_key: privateKey.export({ type: "pkcs8", format: "pem" }),
    client_email: email,
    client_id: "1234567890",
    auth_uri: "https://accounts.google.com/o/oauth2/auth",
    token_uri: tokenUri,
  });
const config = (over: Partial<FcmConfig> = {}): FcmConfig => ({
  projectId: PROJECT,
  serviceAccountJson: serviceAccountJson(),
  baseUrl: fcm.url,
  ...over,
});
const push = (to: string, rendered: Partial<PushRendered> = {}, i = 0): OutgoingMessage<PushRendered> => ({
  deliveryId: `d-${i}`,
  workspaceId: "w",
  userId: `u-${i}`,
  to,
  rendered: { title: "Title", body: "Body", ...rendered },
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("FcmSender", () => {
  it("exchanges a signed JWT for a token and sends the documented v1 message", async () => {
    const sender = new FcmSender(loopback);
    const outcomes = await sender.send(
      [push("device-1", { title: "Hi", body: "There", imageUrl: "https://img.example/x.png", data: { orderId: "42", kind: "shipped" } })],
      config(),
    );

    expect(fcm.exchanges).toHaveLength(1);
    const { header, claims, accessToken } = fcm.exchanges[0]!;
    expect(header).toEqual({ alg: "RS256", typ: "JWT", kid: "0123456789abcdef" });
    expect(claims).toMatchObject({ iss: EMAIL_A, scope: FCM_SCOPE, aud: fcm.tokenUri });
    const { iat, exp } = claims as { iat: number; exp: number };
    expect(Math.abs(iat - Date.now() / 1000)).toBeLessThan(5);
    expect(exp - iat).toBe(3600);

    const tokenReq = fcm.requests.find((r) => r.path === "/token")!;
    expect(tokenReq.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    expect(new URLSearchParams(tokenReq.body).get("grant_type")).toBe("urn:ietf:params:oauth:grant-type:jwt-bearer");

    const sendReq = fcm.requests.find((r) => r.path !== "/token")!;
    expect(sendReq.method).toBe("POST");
    expect(sendReq.path).toBe(`/v1/projects/${PROJECT}/messages:send`);
    expect(sendReq.headers.authorization).toBe(`Bearer ${accessToken}`);
    expect(JSON.parse(sendReq.body)).toEqual({
      message: {
        token: "device-1",
        notification: { title: "Hi", body: "There", image: "https://img.example/x.png" },
        data: { orderId: "42", kind: "shipped" },
      },
    });
    expect(fcm.pushes).toHaveLength(1);
    expect(outcomes).toEqual([{ status: "sent", providerMessageId: fcm.pushes[0]!.name }]);
    expect(fcm.pushes[0]!.name).toMatch(new RegExp(`^projects/${PROJECT}/messages/`));
  });

  it("leaves image and data out when there are none", async () => {
    await new FcmSender(loopback).send([push("device-1")], config());
    expect(JSON.parse(fcm.requests.at(-1)!.body)).toEqual({
      message: { token: "device-1", notification: { title: "Title", body: "Body" } },
    });
  });

  it("caches the access token across sends and batches (one exchange per service account)", async () => {
    const sender = new FcmSender({ ...loopback, concurrency: 4 });
    const batch = Array.from({ length: 10 }, (_, i) => push(`device-${i}`, {}, i));
    const first = await sender.send(batch, config());
    await sender.send([push("device-x")], config());
    await sender.send([push("device-y")], config());
    expect(first.every((o) => o.status === "sent")).toBe(true);
    expect(fcm.pushes).toHaveLength(12);
    expect(fcm.exchanges).toHaveLength(1);
    expect(new Set(fcm.pushes.map((p) => p.accessToken)).size).toBe(1);

    // Another service account gets its own token.
    await sender.send([push("device-z")], config({ serviceAccountJson: serviceAccountJson(EMAIL_B, keyB.privateKey) }));
    expect(fcm.exchanges).toHaveLength(2);
    expect(fcm.exchanges[1]!.claims.iss).toBe(EMAIL_B);
    expect(fcm.pushes.at(-1)!.clientEmail).toBe(EMAIL_B);
    // …and the first one's is still cached.
    await sender.send([push("device-w")], config());
    expect(fcm.exchanges).toHaveLength(2);
  });

  it("renews the token shortly before it expires", async () => {
    await startDouble(2); // tokens live 2 s; the sender renews them after half that
    const sender = new FcmSender(loopback);
    await sender.send([push("device-1")], config());
    await sender.send([push("device-2")], config());
    expect(fcm.exchanges).toHaveLength(1);

    await sleep(1100);
    const outcomes = await sender.send([push("device-3")], config());
    expect(outcomes[0]!.status).toBe("sent");
    expect(fcm.exchanges).toHaveLength(2);
    expect(fcm.pushes.map((p) => p.accessToken)).toEqual([
      fcm.exchanges[0]!.accessToken,
      fcm.exchanges[0]!.accessToken,
      fcm.exchanges[1]!.accessToken,
    ]);
    // No 401 happened: the token was renewed before the provider refused it.
    expect(fcm.requests.filter((r) => r.path !== "/token")).toHaveLength(3);
  });

  it("on 401 renews the token once and sends again", async () => {
    const sender = new FcmSender({ ...loopback, concurrency: 3 });
    await sender.send([push("device-0")], config());
    fcm.revokeTokens();
    const outcomes = await sender.send(
      Array.from({ length: 3 }, (_, i) => push(`device-${i + 1}`, {}, i)),
      config(),
    );
    expect(outcomes.map((o) => o.status)).toEqual(["sent", "sent", "sent"]);
    // Concurrent 401s share one renewal.
    expect(fcm.exchanges).toHaveLength(2);
    expect(fcm.pushes.slice(1).every((p) => p.accessToken === fcm.exchanges[1]!.accessToken)).toBe(true);
  });

  it("fails when the renewed token is refused too (only one renewal)", async () => {
    fcm.refuseAllTokens = true;
    const outcomes = await new FcmSender(loopback).send([push("device-1")], config());
    expect(outcomes).toEqual([
      {
        status: "failed",
        reason: expect.stringMatching(/^FCM UNAUTHENTICATED: Request had invalid authentication credentials.* \(HTTP 401\)$/),
      },
    ]);
    expect(fcm.exchanges).toHaveLength(2);
    expect(fcm.requests.filter((r) => r.path !== "/token")).toHaveLength(2);
  });

  it("fails UNREGISTERED and INVALID_ARGUMENT tokens, sends the others", async () => {
    fcm.unregistered.add("gone");
    fcm.invalid.add("garbage");
    const outcomes = await new FcmSender(loopback).send([push("ok-1"), push("gone"), push("garbage"), push("ok-2")], config());
    expect(outcomes[0]!.status).toBe("sent");
    expect(outcomes[1]).toEqual({ status: "failed", reason: "FCM UNREGISTERED: Requested entity was not found. (HTTP 404)" });
    expect(outcomes[2]).toEqual({
      status: "failed",
      reason: "FCM INVALID_ARGUMENT: The registration token is not a valid FCM registration token (HTTP 400)",
    });
    expect(outcomes[3]!.status).toBe("sent");
    expect(fcm.pushes.map((p) => p.message.token)).toEqual(["ok-1", "ok-2"]);
  });

  it("retries on 429 with Retry-After and on 5xx", async () => {
    const sendOnly = (r: { path: string }) => r.path !== "/token";
    fcm.failNext(
      { ...googleError(429, "RESOURCE_EXHAUSTED", "Quota exceeded", "QUOTA_EXCEEDED"), headers: { "retry-after": "30" } },
      sendOnly,
    );
    fcm.failNext(googleError(503, "UNAVAILABLE", "The service is currently unavailable.", "UNAVAILABLE"), sendOnly);
    const sender = new FcmSender({ ...loopback, concurrency: 1 });
    const outcomes = await sender.send([push("a"), push("b"), push("c")], config());
    expect(outcomes).toEqual([
      { status: "retry", reason: "FCM QUOTA_EXCEEDED: Quota exceeded (HTTP 429)", retryAfterMs: 30_000 },
      { status: "retry", reason: "FCM UNAVAILABLE: The service is currently unavailable. (HTTP 503)" },
      { status: "sent", providerMessageId: fcm.pushes[0]!.name },
    ]);
  });

  it("retries every message when the token endpoint is down or unreachable", async () => {
    fcm.failNext({ status: 503, body: { error: "backend_error" }, headers: { "retry-after": "5" } });
    const outcomes = await new FcmSender(loopback).send([push("a"), push("b")], config());
    expect(outcomes).toEqual([
      { status: "retry", reason: `FCM token exchange at ${fcm.tokenUri} failed: backend_error (HTTP 503)`, retryAfterMs: 5000 },
      { status: "retry", reason: `FCM token exchange at ${fcm.tokenUri} failed: backend_error (HTTP 503)`, retryAfterMs: 5000 },
    ]);
    expect(fcm.pushes).toHaveLength(0);

    const dead = await deadUrl();
    const [unreachable] = await new FcmSender(loopback).send(
      [push("a")],
      config({ serviceAccountJson: serviceAccountJson(EMAIL_A, keyA.privateKey, `${dead}/token`) }),
    );
    expect(unreachable!.status).toBe("retry");
    expect((unreachable as { reason: string }).reason).toMatch(/^FCM token exchange: .*ECONNREFUSED/);
  });

  it("fails every message when Google refuses the JWT (key not the account's)", async () => {
    // Signed with B's key but claiming to be A: the double's signature check refuses it.
    const outcomes = await new FcmSender(loopback).send(
      [push("a"), push("b")],
      config({ serviceAccountJson: serviceAccountJson(EMAIL_A, keyB.privateKey) }),
    );
    expect(outcomes).toEqual([
      { status: "failed", reason: `FCM token exchange at ${fcm.tokenUri} failed: invalid_grant: Invalid JWT Signature. (HTTP 400)` },
      { status: "failed", reason: `FCM token exchange at ${fcm.tokenUri} failed: invalid_grant: Invalid JWT Signature. (HTTP 400)` },
    ]);
    expect(fcm.exchanges).toHaveLength(0);
    expect(fcm.pushes).toHaveLength(0);
  });

  it("fails every message when the service account JSON is unusable", async () => {
    const outcomes = await new FcmSender(loopback).send(
      [push("a")],
      config({ serviceAccountJson: JSON.stringify({ client_email: EMAIL_A, private_key: "not a key", token_uri: fcm.tokenUri }) }),
    );
    expect(outcomes[0]!.status).toBe("failed");
    expect((outcomes[0] as { reason: string }).reason).toMatch(/^FCM: service account private_key is not a readable PEM key/);
    const missing = await new FcmSender(loopback).send([push("a")], config({ serviceAccountJson: JSON.stringify({ private_key: "x" }) }));
    expect(missing).toEqual([{ status: "failed", reason: "FCM: service account JSON has no client_email" }]);
    expect(fcm.requests).toHaveLength(0);
  });

  it("the double's token endpoint refuses expired, over-long or misaddressed assertions", async () => {
    const { signAssertion, parseServiceAccount } = await import("../../src/messaging/channels/fcm.ts");
    const account = parseServiceAccount(serviceAccountJson());
    if ("reason" in account) throw new Error(account.reason);
    const exchange = async (assertion: string) => {
      const res = await fetch(fcm.tokenUri, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer", assertion }),
      });
      return { status: res.status, body: (await res.json()) as { error?: string; access_token?: string } };
    };
    const now = Math.floor(Date.now() / 1000);
    expect((await exchange(signAssertion(account, now))).body.access_token).toBeTruthy();
    expect((await exchange(signAssertion(account, now - 7200))).body.error).toBe("invalid_grant"); // expired
    expect((await exchange(signAssertion({ ...account, tokenUri: "https://elsewhere/token" }, now))).body.error).toBe("invalid_grant");
    const [h, c, s] = signAssertion(account, now).split(".");
    const longer = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(c!, "base64url").toString()), exp: now + 7200 })).toString(
      "base64url",
    );
    expect((await exchange(`${h}.${longer}.${s}`)).body.error).toBe("invalid_grant"); // signature no longer matches
  });
});
