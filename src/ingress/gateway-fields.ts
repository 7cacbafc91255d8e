import { z } from 'zod';
import { GatewayError } from '../errors/gateway-error.js';
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

/**
 * What joins the values of a header sent more than once, as the server hands session headers
 * to the pipeline: a line feed, which no header value can hold, so a repeat is told apart from
 * one value that contains a comma.
 */
export const REPEATED_HEADER = '\n';

/** The longest `op.session`, in characters (also for sessions named by agent clients' headers). */
export const SESSION_MAX_CHARS = 256;

/**
 * A session named outside `op.session` (an agent client's header, Claude Code's
 * `metadata.user_id`), held to `op.session`'s rule: 1 to {@link SESSION_MAX_CHARS} characters.
 * @param param where it came from, named in the error (`x-claude-code-session-id`, `metadata.user_id`).
 * @throws GatewayError `invalid_request` (400) with `param` when the value breaks the rule.
 */
export function checkedSession(value: string, param: string): string {
  if (value.includes(REPEATED_HEADER)) {
    throw new GatewayError('invalid_request', `${param}: the header is sent more than once; send one session id`, { param });
  }
  if (value.includes('\uFFFD')) {
    throw new GatewayError('invalid_request', `${param}: a session id must be valid UTF-8`, { param });
  }
  if (value.length < 1 || value.length > SESSION_MAX_CHARS) {
    throw new GatewayError('invalid_request', `${param}: a session id must be 1 to ${SESSION_MAX_CHARS} characters, got ${value.length}`, { param });
  }
  return value;
}

const op = z
  .object({
    retention: z.union([z.literal('none'), z.number().int().min(0).max(36_500)]).optional(),
    tags: z.array(z.string().min(1).max(64)).max(16).optional(),
    session: z.string().min(1).max(SESSION_MAX_CHARS).optional(),
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
