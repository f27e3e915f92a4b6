// Which TIDINGS_SECRET_KEY this database's secrets belong to. A check value derived from the key
// is stored at first start; a start with another key stops at boot (instead of every stored
// secret failing to decrypt later), unless the old key is given as TIDINGS_SECRET_KEY_PREVIOUS,
// in which case the stored secrets are re-encrypted under the new key in one transaction.
import { ConfigError, type ResolvedConfig } from "../config.ts";
import type { PrismaClient } from "../db/client.ts";
import { prismaExecute, sql } from "../db/sql.ts";
import { resealProviderSecrets, sealedProviderSecrets } from "./providers/service.ts";
import { deriveKey, SecretBox } from "../lib/secrets.ts";

const SETTING = "secret_key_check";
/** Serialises the check across replicas starting together. */
const CHECK_LOCK = 7_461_737;
/**
 * Prisma's defaults (2 s to open the transaction, 5 s in all) stopped a replica's boot when the
 * database was slow to accept a connection — several replicas starting at once on a busy server —
 * or when the replicas ahead of it held the lock: the check waits its turn instead.
 */
const CHECK_TRANSACTION = { maxWait: 30_000, timeout: 60_000 };

/** A value that identifies the key without revealing it or any key derived for another purpose. */
export const secretKeyCheck = (secretKey: string) => deriveKey(secretKey, "key-check/v1").toString("base64url");

function mismatch(previousGiven: boolean): ConfigError {
  return new ConfigError(
    "Invalid configuration:\n  TIDINGS_SECRET_KEY: is not the key this database's secrets were encrypted with. " +
      "Start with the key used before" +
      (previousGiven
        ? "; TIDINGS_SECRET_KEY_PREVIOUS does not match it either."
        : ", or, to change keys, set the new one as TIDINGS_SECRET_KEY and the old one as TIDINGS_SECRET_KEY_PREVIOUS (the secrets are re-encrypted at start)."),
  );
}

/**
 * Checks the configured secret key against the database, rotating from the previous key when
 * that is the one the database knows. Throws a ConfigError naming TIDINGS_SECRET_KEY otherwise.
 */
export async function verifySecretKey(
  prisma: PrismaClient,
  config: Pick<ResolvedConfig, "secretKey" | "previousSecretKey">,
  log: (msg: string) => void,
): Promise<void> {
  const current = secretKeyCheck(config.secretKey);
  const previous = config.previousSecretKey;
  await prisma.$transaction(async (tx) => {
    await prismaExecute(tx, sql`SELECT pg_advisory_xact_lock(${CHECK_LOCK})`);
    const stored = (await tx.serverSetting.findUnique({ where: { name: SETTING } }))?.value;
    if (stored === current) return;
    // Before the check existed (or on a fresh database) the sealed values themselves tell.
    const knows = async (key: string) =>
      stored !== undefined
        ? stored === secretKeyCheck(key)
        : sealedProviderSecrets(tx, new SecretBox(key)).then((s) => s.opened > 0 || s.total === 0);
    if (!(await knows(config.secretKey))) {
      if (!previous || !(await knows(previous))) throw mismatch(previous !== undefined);
      const { resealed, unreadable } = await resealProviderSecrets(tx, new SecretBox(previous), new SecretBox(config.secretKey));
      log(
        `re-encrypted ${resealed} provider secret(s) under the new TIDINGS_SECRET_KEY` +
          (unreadable ? `; ${unreadable} could not be decrypted with either key and show as unreadable until replaced` : ""),
      );
    }
    await tx.serverSetting.upsert({ where: { name: SETTING }, create: { name: SETTING, value: current }, update: { value: current } });
  }, CHECK_TRANSACTION);
}
