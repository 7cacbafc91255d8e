import { z } from 'zod';
import { normalizeProviderPreferences, providerPreferencesSchema } from '../config/provider-preferences-schema.js';
import type { ProviderPreferences } from '../core/chat-types.js';

/**
 * The gateway fields (SPEC §2.1), accepted in the request body of every client API: `models`
 * (fallback models, each may carry a variant such as `:nitro`), `provider` (routing
 * preferences in OpenRouter's `ProviderPreferences` shape, nulls allowed and normalised away),
 * `op` (retention, tags, session).
 */

/**
 * `provider` as OpenRouter sends it, normalised to the internal {@link ProviderPreferences}
 * (null members dropped, `sort` split, `max_price` strings read as numbers). Members the
 * gateway cannot act on are kept in a non-enumerable `ignored` list for the warnings.
 */
const provider = providerPreferencesSchema.transform((p): ProviderPreferences => {
  const { prefs, ignored } = normalizeProviderPreferences(p);
  if (ignored.length > 0) Object.defineProperty(prefs, 'ignored', { value: ignored, enumerable: false });
  return prefs;
});

/** Members of `provider` accepted but not acted on (see {@link provider}). */
export function ignoredProviderMembers(p: ProviderPreferences | undefined): string[] {
  return (p as { ignored?: string[] } | undefined)?.ignored ?? [];
}

const op = z
  .object({
    retention: z.union([z.literal('none'), z.number().int().min(0).max(36_500)]).optional(),
    tags: z.array(z.string().min(1).max(64)).max(16).optional(),
    session: z.string().min(1).max(256).optional(),
    /** Answer from the exact response cache when it holds this request, and store the answer (docs/observability.md). */
    cache: z.boolean().optional(),
    /** How long a stored answer lives, in seconds (bounded by `cache.max_ttl_s`). */
    cache_ttl: z.number().int().min(1).max(365 * 86_400).optional(),
  })
  .strict();

/** Spread into an API's request object schema. */
export const gatewayFields = {
  models: z.array(z.string().min(1)).max(16).nullable().optional().transform((v) => v ?? undefined),
  provider: provider.nullable().optional().transform((v) => v ?? undefined),
  op: op.optional(),
};
