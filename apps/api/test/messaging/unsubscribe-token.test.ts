import { describe, expect, it } from "vitest";
import { signUnsubscribeToken, unsubscribeUrl, verifyUnsubscribeToken } from "../../src/subscription-groups/unsubscribe-token.ts";

const KEY = "test-secret-key-0123456789abcdef0123456789";
const keys = { secretKey: KEY };
const subject = { workspaceId: "5f0c6c2e-0a51-4c7e-9a55-2f3f1d6f8a01", userId: "user-1" };

describe("unsubscribe tokens", () => {
  it("verifies a token it signed and returns its subject", () => {
    const now = 1_700_000_000_000;
    const token = signUnsubscribeToken(KEY, { ...subject, subscriptionGroupId: "g-1" }, { now, ttlMs: 60_000 });
    expect(verifyUnsubscribeToken(keys, token, now + 1_000)).toEqual({
      ok: true,
      payload: { ...subject, subscriptionGroupId: "g-1", exp: now + 60_000 },
    });
  });

  it("omits the subscription group when none is given", () => {
    const result = verifyUnsubscribeToken(keys, signUnsubscribeToken(KEY, subject));
    expect(result.ok && result.payload).toMatchObject(subject);
    expect(result.ok && "subscriptionGroupId" in result.payload).toBe(false);
  });

  it("rejects an expired token", () => {
    const token = signUnsubscribeToken(KEY, subject, { now: 1_000, ttlMs: 1_000 });
    expect(verifyUnsubscribeToken(keys, token, 2_000)).toEqual({ ok: false, reason: "expired" });
  });

  it("rejects a token signed with another key", () => {
    const token = signUnsubscribeToken("another-secret-key-0123456789abcdef0123", subject);
    expect(verifyUnsubscribeToken(keys, token)).toEqual({ ok: false, reason: "signature" });
  });

  it("rejects a payload changed to another user", () => {
    const token = signUnsubscribeToken(KEY, subject);
    const [payload, mac] = token.split(".") as [string, string];
    const forged = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
    forged.userId = "someone-else";
    const tampered = `${Buffer.from(JSON.stringify(forged)).toString("base64url")}.${mac}`;
    expect(verifyUnsubscribeToken(keys, tampered)).toEqual({ ok: false, reason: "signature" });
  });

  it("rejects malformed tokens", () => {
    for (const bad of ["", "abc", "a.b.c", "."]) {
      expect(verifyUnsubscribeToken(keys, bad).ok).toBe(false);
    }
  });

  describe("across a key rotation", () => {
    const OLD = "old-secret-key-0123456789abcdef0123456789";
    const rotated = { secretKey: KEY, previousSecretKey: OLD };

    it("verifies a token signed with the previous key while it is configured as previous", () => {
      const token = signUnsubscribeToken(OLD, { ...subject, subscriptionGroupId: "g-1" });
      expect(verifyUnsubscribeToken(rotated, token)).toMatchObject({ ok: true, payload: { ...subject, subscriptionGroupId: "g-1" } });
      // Tokens signed after the rotation (with the current key) verify too.
      expect(verifyUnsubscribeToken(rotated, signUnsubscribeToken(KEY, subject)).ok).toBe(true);
    });

    it("rejects a token signed with the old key once no previous key is configured", () => {
      const token = signUnsubscribeToken(OLD, subject);
      expect(verifyUnsubscribeToken(keys, token)).toEqual({ ok: false, reason: "signature" });
      expect(verifyUnsubscribeToken({ secretKey: KEY, previousSecretKey: undefined }, token)).toEqual({ ok: false, reason: "signature" });
    });

    it("rejects a token signed with a third key, and an expired one signed with the previous key", () => {
      const other = signUnsubscribeToken("another-secret-key-0123456789abcdef0123", subject);
      expect(verifyUnsubscribeToken(rotated, other)).toEqual({ ok: false, reason: "signature" });
      const expired = signUnsubscribeToken(OLD, subject, { now: 1_000, ttlMs: 1_000 });
      expect(verifyUnsubscribeToken(rotated, expired, 2_000)).toEqual({ ok: false, reason: "expired" });
    });
  });

  it("builds the public link with the token as a query parameter", () => {
    const token = signUnsubscribeToken(KEY, subject);
    const url = new URL(unsubscribeUrl("http://127.0.0.1:3000", token));
    expect(url.origin + url.pathname).toBe("http://127.0.0.1:3000/api/public/subscriptions/unsubscribe");
    expect(url.searchParams.get("token")).toBe(token);
  });
});
