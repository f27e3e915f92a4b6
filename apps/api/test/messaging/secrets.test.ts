import { describe, expect, it } from "vitest";
import { SecretBox, SecretDecryptionError } from "../../src/lib/secrets.ts";

const KEY = "test-secret-key-0123456789abcdef0123456789";
const box = new SecretBox(KEY);

/** Flips one bit of the base64url part at `index` of a sealed value. */
function flip(sealed: string, index: number): string {
  const parts = sealed.split(".");
  const bytes = Buffer.from(parts[index]!, "base64url");
  bytes[0]! ^= 1;
  parts[index] = bytes.toString("base64url");
  return parts.join(".");
}

describe("SecretBox", () => {
  it("round-trips a secret and never contains the plaintext", () => {
    const plaintext = JSON.stringify({ password: "hunter2-and-more", emoji: "🔐" });
    const sealed = box.seal(plaintext, "ctx-1");
    expect(sealed.startsWith("v1.")).toBe(true);
    expect(sealed).not.toContain("hunter2");
    expect(box.open(sealed, "ctx-1")).toBe(plaintext);
    expect(new SecretBox(KEY).open(sealed, "ctx-1")).toBe(plaintext);
  });

  it("uses a fresh IV each time", () => {
    const a = box.seal("same", "ctx");
    const b = box.seal("same", "ctx");
    expect(a).not.toBe(b);
    expect(a.split(".")[1]).not.toBe(b.split(".")[1]);
  });

  it("detects tampering with the ciphertext, the tag or the IV", () => {
    const sealed = box.seal("top secret value", "ctx");
    for (const index of [1, 2, 3]) {
      expect(() => box.open(flip(sealed, index), "ctx")).toThrow(SecretDecryptionError);
    }
  });

  it("fails under another key or another context", () => {
    const sealed = box.seal("top secret value", "workspace-a/provider-1");
    expect(() => new SecretBox("another-secret-key-0123456789abcdef0123").open(sealed, "workspace-a/provider-1")).toThrow(
      SecretDecryptionError,
    );
    expect(() => box.open(sealed, "workspace-b/provider-1")).toThrow(SecretDecryptionError);
  });

  it("refuses malformed values and unknown versions", () => {
    const sealed = box.seal("x", "ctx");
    for (const bad of ["", "plaintext", sealed.replace(/^v1/, "v9"), `${sealed}.extra`, sealed.split(".").slice(0, 3).join(".")]) {
      expect(() => box.open(bad, "ctx")).toThrow(SecretDecryptionError);
    }
  });
});
