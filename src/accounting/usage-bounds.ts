import type { Usage } from '../core/chat-types.js';

/**
 * Largest token count one generation may report in any usage field: 100M tokens, ten times the
 * largest context window served today. Anything above is an upstream bug (a `prompt_tokens` of
 * 1e25 has been seen); it would otherwise poison cost, credit limits, rollups and metrics, and
 * overflow the 64-bit columns of the records.
 */
export const MAX_USAGE_TOKENS = 100_000_000;

/** The warning a generation record carries when its usage was clamped (`detail.warnings`). */
export const USAGE_CLAMPED = 'usage_clamped';

const FIELDS = ['promptTokens', 'completionTokens', 'cachedTokens', 'cacheWriteTokens', 'reasoningTokens'] as const;

/** One token count made plausible: a whole number in [0, {@link MAX_USAGE_TOKENS}]; NaN is "not reported" (null). */
export function boundTokens(n: number | null): number | null {
  if (n === null) return null;
  if (Number.isNaN(n)) return null;
  if (n > MAX_USAGE_TOKENS) return MAX_USAGE_TOKENS;
  if (n < 0) return 0;
  return Math.round(n);
}

/**
 * Clamp implausible usage counts (above {@link MAX_USAGE_TOKENS}, negative, fractional or NaN).
 * Returns the usage unchanged (same object) when every count is plausible, else a copy with the
 * counts bounded and `warning` describing what was changed (`usage_clamped: prompt_tokens 1e+25`),
 * to be kept in the generation record.
 */
export function clampUsage<U extends Usage | null>(usage: U): { usage: U; warning: string | null } {
  if (!usage) return { usage, warning: null };
  let out: Usage | null = null;
  const given: Usage = usage;
  const changed: string[] = [];
  for (const f of FIELDS) {
    const v = given[f];
    const b = boundTokens(v);
    if (b === v) continue;
    out ??= { ...given };
    out[f] = b;
    changed.push(`${f.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)} ${String(v)}`);
  }
  return out ? { usage: out as U, warning: `${USAGE_CLAMPED}: ${changed.join(', ')} (bound ${MAX_USAGE_TOKENS})` } : { usage, warning: null };
}
