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

/** Parts bounded by their whole: cached and cache-write tokens are part of the prompt, reasoning of the completion. */
const PARTS: ReadonlyArray<[part: (typeof FIELDS)[number], whole: 'promptTokens' | 'completionTokens']> = [
  ['cachedTokens', 'promptTokens'],
  ['cacheWriteTokens', 'promptTokens'],
  ['reasoningTokens', 'completionTokens'],
];

const wireName = (f: string) => f.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * A usage count as an upstream reported it, for the adapters: any number passes unchanged (even
 * negative, fractional or huge), so that {@link clampUsage} is the one place that bounds it and
 * says so; anything else (absent, null, a string, NaN) is "not reported" (null).
 */
export function reportedCount(v: unknown): number | null {
  return typeof v === 'number' && !Number.isNaN(v) ? v : null;
}

/** One token count made plausible: a whole number in [0, {@link MAX_USAGE_TOKENS}]; NaN is "not reported" (null). */
export function boundTokens(n: number | null): number | null {
  if (n === null) return null;
  if (Number.isNaN(n)) return null;
  if (n > MAX_USAGE_TOKENS) return MAX_USAGE_TOKENS;
  if (n < 0) return 0;
  return Math.round(n);
}

/**
 * Make usage plausible, by one rule: every count a whole number in [0, {@link MAX_USAGE_TOKENS}]
 * (negative → 0, fractional → rounded, above the bound → the bound; NaN → not reported), then
 * `cachedTokens` and `cacheWriteTokens` at most `promptTokens` and `reasoningTokens` at most
 * `completionTokens` (when the whole is reported). Returns the usage unchanged (same object) when
 * nothing had to change, else a copy and a `warning` naming every changed field with its
 * reported and its kept value (`usage_clamped: prompt_tokens -5 → 0, cached_tokens 1e+30 → 0 …`),
 * kept in the generation record. The response, the cost and the record all use the copy.
 */
export function clampUsage<U extends Usage | null>(usage: U): { usage: U; warning: string | null } {
  if (!usage) return { usage, warning: null };
  const given: Usage = usage;
  const out: Usage = { ...given };
  for (const f of FIELDS) out[f] = boundTokens(given[f]);
  for (const [part, whole] of PARTS) {
    const p = out[part];
    const w = out[whole];
    if (p !== null && w !== null && p > w) out[part] = w;
  }
  const changed = FIELDS.filter((f) => !Object.is(out[f], given[f])).map((f) => `${wireName(f)} ${String(given[f])} → ${String(out[f])}`);
  if (changed.length === 0) return { usage, warning: null };
  return {
    usage: out as U,
    warning: `${USAGE_CLAMPED}: ${changed.join(', ')} (each count a whole number in [0, ${MAX_USAGE_TOKENS}]; cached and cache-write tokens at most prompt_tokens, reasoning_tokens at most completion_tokens)`,
  };
}
