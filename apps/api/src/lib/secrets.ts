// Keys derived from TIDINGS_SECRET_KEY, and encryption at rest of provider secrets.
// Sealed format: `v1.<iv>.<tag>.<ciphertext>` (base64url parts), AES-256-GCM with a random 96-bit
// IV; the context (e.g. the row's workspace and id) is bound as additional authenticated data,
// so a sealed value copied onto another row does not open there.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";

const VERSION = "v1";
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * A 32-byte key for one purpose. HKDF (not a password hash) is enough because the secret key is
 * generated or required to be ≥ 32 random characters; distinct purposes never share a key.
 */
export function deriveKey(secretKey: string, purpose: string): Buffer {
  return Buffer.from(hkdfSync("sha256", secretKey, "tidings", `tidings/${purpose}`, 32));
}

export class SecretDecryptionError extends Error {
  override name = "SecretDecryptionError";
}

export class SecretBox {
  readonly #key: Buffer;

  constructor(secretKey: string) {
    this.#key = deriveKey(secretKey, "provider-secrets/v1");
  }

  seal(plaintext: string, context: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.#key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(context, "utf8"));
    const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
    return [VERSION, iv, cipher.getAuthTag(), ciphertext].map((p) => (typeof p === "string" ? p : p.toString("base64url"))).join(".");
  }

  /** Throws SecretDecryptionError when the value was altered, sealed under another key or context, or is not ours. */
  open(sealed: string, context: string): string {
    const [version, ivText, tagText, ctText, ...rest] = sealed.split(".");
    if (version !== VERSION || ivText === undefined || tagText === undefined || ctText === undefined || rest.length > 0) {
      throw new SecretDecryptionError("Not a sealed secret of a known version");
    }
    const iv = Buffer.from(ivText, "base64url");
    const tag = Buffer.from(tagText, "base64url");
    if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) throw new SecretDecryptionError("Malformed sealed secret");
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.#key, iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(context, "utf8"));
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(Buffer.from(ctText, "base64url")), decipher.final()]).toString("utf8");
    } catch {
      throw new SecretDecryptionError("Secret does not decrypt: altered, or sealed under another TIDINGS_SECRET_KEY");
    }
  }
}
