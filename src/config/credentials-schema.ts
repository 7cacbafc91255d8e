import { z } from 'zod';

/**
 * Several credentials of one provider (`providers[].api_keys`, issue 20 item 4): a config
 * fragment shared by every kind that authenticates with a key, kept out of `schema.ts` (see
 * the folder README). The gateway spreads requests over the entries by weight; a 429 or an
 * auth failure cools one entry, not the endpoint (src/routing/provider-credentials.ts).
 */

const label = z.string().regex(/^[a-z0-9][a-z0-9._-]*$/i, 'must be a slug: letters, digits, ".", "_" or "-"').max(64, 'must be at most 64 characters');

/**
 * One entry of `api_keys`:
 * - `label`: names the credential in records, logs and `config check` (never its value); unique
 *   per provider;
 * - `key`: sent exactly as `api_key` would be (the kind's header: `Authorization: Bearer`,
 *   `x-api-key`, `x-goog-api-key`, `api-key`); `${VAR}` substitution applies; no control
 *   characters (`headerValue`, the rule of `api_key`);
 * - `weight`: its share of the provider's requests, a positive integer, default 1.
 *
 * `headerValue` is passed in so this file need not import `schema.ts` (which imports it).
 */
export function apiKeysSchema(headerValue: z.ZodType<string>) {
  return z
    .array(
      z
        .object({
          label,
          key: headerValue,
          weight: z.number().int('must be a whole number').min(1).max(1_000_000).default(1),
        })
        .strict(),
    )
    .min(1, 'list at least one key (or use api_key)');
}

/** One credential of a provider, defaults applied (see {@link apiKeysSchema}). */
export interface ApiKeyEntry {
  readonly label: string;
  readonly key: string;
  readonly weight: number;
}

/** `2 keys: a (weight 1), b (weight 2)`: the labels and weights of a provider's keys, never their values. */
export function describeApiKeys(entries: readonly Pick<ApiKeyEntry, 'label' | 'weight'>[]): string {
  return `${entries.length} key${entries.length === 1 ? '' : 's'}: ${entries.map((k) => `${k.label} (weight ${k.weight})`).join(', ')}`;
}

/**
 * One line per provider with `api_keys` that names no provider preset (those are described with
 * their preset's expansion), for `config check`: `providers[0] "openai": 3 keys: a (weight 1), …`.
 * Labels and weights only, never a key's value.
 */
export function describeCredentialLines(providers: readonly { id: string; preset?: string | undefined; api_keys?: readonly ApiKeyEntry[] | undefined }[]): string[] {
  return providers.flatMap((p, i) => (p.api_keys === undefined || p.preset !== undefined ? [] : [`providers[${i}] "${p.id}": ${describeApiKeys(p.api_keys)}`]));
}
