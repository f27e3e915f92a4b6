// How a provider's config is split between the plain `config` column and the encrypted
// `secrets` column, merged on update, and masked in responses.
import { type ErrorIssue, providerEndpointFields, type ProviderType, providerSecretFields, SECRET_MASK_PREFIX } from "@tidings/schema";

export type Secrets = Record<string, string>;

/** Masked form of a secret: `••••` plus its last 4 characters when it has at least 16. */
export function maskSecret(value: string): string {
  return value.length >= 16 ? `${SECRET_MASK_PREFIX}${value.slice(-4)}` : SECRET_MASK_PREFIX;
}

export const secretFieldsOf = (type: ProviderType): readonly string[] => providerSecretFields[type];

/** The config without its secret fields. */
export function plainConfig(type: ProviderType, config: Record<string, unknown>): Record<string, unknown> {
  const secretFields = secretFieldsOf(type);
  return Object.fromEntries(Object.entries(config).filter(([k]) => !secretFields.includes(k)));
}

/** The plain (non-secret) fields after an update: an omitted field keeps the stored value, `null` removes it. */
export function mergePlain(
  type: ProviderType,
  requested: Record<string, unknown>,
  stored: Record<string, unknown>,
): Record<string, unknown> {
  const merged = { ...stored };
  for (const [field, value] of Object.entries(plainConfig(type, requested))) {
    if (value === null) delete merged[field];
    else if (value !== undefined) merged[field] = value;
  }
  return merged;
}

/**
 * The secrets after an update: an omitted field keeps the stored value, `null` removes it, the
 * masked form of the stored value keeps it, any other string replaces it.
 */
export function mergeSecrets(
  type: ProviderType,
  requested: Record<string, unknown>,
  stored: Secrets,
): { secrets: Secrets; issues: ErrorIssue[] } {
  const secrets: Secrets = {};
  const issues: ErrorIssue[] = [];
  for (const field of secretFieldsOf(type)) {
    const value = requested[field];
    const previous = stored[field];
    if (value === undefined) {
      if (previous !== undefined) secrets[field] = previous;
    } else if (typeof value === "string") {
      if (!value.startsWith(SECRET_MASK_PREFIX)) secrets[field] = value;
      else if (previous !== undefined && maskSecret(previous) === value) secrets[field] = previous;
      else
        issues.push({ path: `config.${field}`, message: "this is a masked value that matches no stored secret; send the secret itself" });
    }
  }
  return { secrets, issues };
}

/**
 * A stored secret is bound to where it is sent: an update that changes an endpoint field
 * (providerEndpointFields) and keeps a stored secret (left out, or sent back masked) is refused,
 * one issue per changed field; sending the secret again (or `null`) is the way through.
 */
export function endpointIssues(
  type: ProviderType,
  requested: Record<string, unknown>,
  stored: { plain: Record<string, unknown>; secrets: Secrets },
  plain: Record<string, unknown>,
): ErrorIssue[] {
  const kept = secretFieldsOf(type).filter((field) => {
    const value = requested[field];
    return (
      stored.secrets[field] !== undefined && (value === undefined || (typeof value === "string" && value.startsWith(SECRET_MASK_PREFIX)))
    );
  });
  if (kept.length === 0) return [];
  const changed = (providerEndpointFields[type] as readonly string[]).filter(
    (field) => JSON.stringify(stored.plain[field] ?? null) !== JSON.stringify(plain[field] ?? null),
  );
  return changed.map((field) => ({
    path: `config.${field}`,
    message: `changing ${field} would send the stored ${kept.join(" and ")} to a new destination; send ${kept.join(" and ")} again with it (or null to remove it)`,
  }));
}

/** The config as responses show it: secrets replaced by their masks. */
export function maskedConfig(type: ProviderType, plain: Record<string, unknown>, secrets: Secrets): Record<string, unknown> {
  const out = { ...plain };
  for (const field of secretFieldsOf(type)) {
    const value = secrets[field];
    if (value !== undefined) out[field] = maskSecret(value);
  }
  return out;
}
