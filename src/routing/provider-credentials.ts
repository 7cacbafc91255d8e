/**
 * Several weighted credentials per provider (`providers[].api_keys`, issue 20 item 4): the
 * per-credential views of an endpoint, built once with the catalog, the weighted choice of one
 * for an attempt, and the in-process cooldown of each (a 429 or an auth failure cools that
 * credential, not the endpoint). Adapters never see this: they read `target.provider.api_key`,
 * which in a credential's view is that credential's key.
 */
import type { ApiKeyEntry } from '../config/credentials-schema.js';
import type { ProviderConfig } from '../config/schema.js';
import type { ProviderTarget } from '../providers/types.js';

/**
 * How long an auth failure (the upstream's 401/403: `upstream_auth_failed`) cools the credential
 * that got it, in ms: long enough that a revoked key stops taking traffic, short enough that a
 * key fixed upstream comes back on its own.
 */
export const CREDENTIAL_AUTH_COOLDOWN_MS = 60_000;

/**
 * How long a 429 (`upstream_rate_limited`) without `Retry-After` cools the credential, in ms;
 * with one, its value. Both are capped at `routing.retry_after_cap_ms`, as an endpoint's
 * cooldown is.
 */
export const CREDENTIAL_RATE_LIMIT_COOLDOWN_MS = 10_000;

/** Why a credential cools down: the upstream's 429, or its 401/403. */
export type CredentialCooldownCause = 'rate_limit' | 'auth';

/** One credential of an endpoint: its label and weight, and the endpoint as it is called with it. */
export interface ResolvedCredential {
  /** The `api_keys` entry's label (named in records and logs; never the key). */
  readonly label: string;
  /** Its share of the provider's requests (a positive integer). */
  readonly weight: number;
  /** `<provider id>` NUL `<label>`: the cooldown's key, made once. */
  readonly key: string;
  /** The endpoint with `provider.api_key` set to this credential's key; frozen, built once with the catalog. */
  readonly target: ProviderTarget;
}

/**
 * One frozen provider config per `api_keys` entry, `api_key` set to the entry's key (every other
 * field, `api_keys` included, as configured: the client-safe wrapper redacts them all).
 * Undefined for a provider without `api_keys` (its one `api_key`, today's path).
 */
export function providerCredentialViews(provider: ProviderConfig): readonly { entry: ApiKeyEntry; provider: ProviderConfig }[] | undefined {
  if (provider.api_keys === undefined) return undefined;
  return Object.freeze(provider.api_keys.map((entry) => Object.freeze({ entry, provider: Object.freeze({ ...provider, api_key: entry.key }) })));
}

/** The credentials of one endpoint from its provider's views (see {@link providerCredentialViews}). */
export function resolveCredentials(target: ProviderTarget, views: ReturnType<typeof providerCredentialViews>): readonly ResolvedCredential[] | undefined {
  if (views === undefined) return undefined;
  return Object.freeze(
    views.map(({ entry, provider }) =>
      Object.freeze({ label: entry.label, weight: entry.weight, key: `${provider.id}\u0000${entry.label}`, target: Object.freeze({ ...target, provider }) }),
    ),
  );
}

/**
 * The cooldowns of credentials, in-process (like an endpoint's cooldown; not shared between
 * replicas): `until` is a `now()` time in ms. Kept across config reloads by provider id and
 * label.
 */
export class CredentialCooldowns {
  private readonly until = new Map<string, { until: number; cause: CredentialCooldownCause }>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Cool one credential for `ms` (a longer cooldown already set stays). */
  cool(credential: Pick<ResolvedCredential, 'key'>, ms: number, cause: CredentialCooldownCause): void {
    if (!(ms > 0)) return;
    const until = this.now() + ms;
    const current = this.until.get(credential.key);
    if (current === undefined || current.until <= until) this.until.set(credential.key, { until, cause });
  }

  /** The remaining cooldown of a credential and its cause, or undefined when it is usable now. */
  cooling(credential: Pick<ResolvedCredential, 'key'>): { remainingMs: number; cause: CredentialCooldownCause } | undefined {
    const c = this.until.get(credential.key);
    if (c === undefined) return undefined;
    const remainingMs = c.until - this.now();
    if (remainingMs > 0) return { remainingMs, cause: c.cause };
    this.until.delete(credential.key);
    return undefined;
  }

  /** Whether any of the credentials is usable now (and not in `exclude`, keys as {@link ResolvedCredential.key}). */
  anyUsable(credentials: readonly ResolvedCredential[], exclude?: ReadonlySet<string>): boolean {
    for (const c of credentials) if (!exclude?.has(c.key) && this.cooling(c) === undefined) return true;
    return false;
  }

  /** The shortest remaining cooldown over the credentials, in ms (0 when one is usable). */
  soonestUsableMs(credentials: readonly ResolvedCredential[]): number {
    let min = Number.POSITIVE_INFINITY;
    for (const c of credentials) min = Math.min(min, this.cooling(c)?.remainingMs ?? 0);
    return min === Number.POSITIVE_INFINITY ? 0 : min;
  }

  /**
   * A weighted random choice among the credentials not cooling (`random`: uniform in [0, 1)),
   * skipping those in `exclude` (already tried by this request); undefined when none is left.
   * Allocates nothing.
   */
  pick(credentials: readonly ResolvedCredential[], random: () => number, exclude?: ReadonlySet<string>): ResolvedCredential | undefined {
    let total = 0;
    for (const c of credentials) if (!exclude?.has(c.key) && this.cooling(c) === undefined) total += c.weight;
    if (total === 0) return undefined;
    let r = random() * total;
    let last: ResolvedCredential | undefined;
    for (const c of credentials) {
      if (exclude?.has(c.key) || this.cooling(c) !== undefined) continue;
      last = c;
      r -= c.weight;
      if (r < 0) return c;
    }
    return last;
  }
}
