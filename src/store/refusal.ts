import { ERROR_CATALOG } from '../errors/catalog.js';

/**
 * Error codes of a refusal: the catalog's 4xx codes outside scope `provider` — the request's or
 * the key's own problem (invalid input, a key limit, an unknown or forbidden model, a prompt
 * too long for the model), not a failure of a provider or of the gateway.
 */
export const REFUSAL_CODES: readonly string[] = Object.entries(ERROR_CATALOG)
  .filter(([, d]) => d.status >= 400 && d.status < 500 && d.scope !== 'provider')
  .map(([code]) => code);
const REFUSALS = new Set(REFUSAL_CODES);

/**
 * Whether a generation row is a refusal: an error with one of {@link REFUSAL_CODES} and no
 * provider answering. The one definition: the rollup writer counts these under `refused` (not
 * `errors`), and migration `0006` backfills the rollups with it, so the usage reads never look
 * at the generations to tell them apart.
 */
export function isRefusal(g: { status: string; error_code: string | null; provider: string | null }): boolean {
  return g.status === 'error' && g.provider === null && g.error_code !== null && REFUSALS.has(g.error_code);
}
