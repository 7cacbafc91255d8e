import type { Usage } from './chat-types.js';

/**
 * Arithmetic on token counts and {@link Usage}. Two null rules, one per use, each named here:
 * - adding reports ({@link addTokenCounts}, {@link addUsage}): null is "not reported" and
 *   poisons the sum (null + n = null), so a partial count is never passed off as a whole one;
 * - the wire totals ({@link totalTokens}, {@link uncachedPromptTokens}): a count not reported
 *   reads 0, for APIs whose fields are required numbers.
 * All counts are tokens.
 */

/** `a + b`, or null ("not reported") when either is null: the poison sum. */
export function addTokenCounts(a: number | null, b: number | null): number | null {
  return a === null || b === null ? null : a + b;
}

/**
 * The usage of two calls together, e.g. the batches of one embeddings request: every count by
 * {@link addTokenCounts} (a count one call did not report is not reported for the whole).
 * `sum` null (nothing added yet) gives `u` itself, unchanged; otherwise a new usage with
 * `source: 'upstream'`, since only what upstreams reported is added (an estimate is made for the
 * whole instead).
 */
export function addUsage(sum: Usage | null, u: Usage): Usage {
  if (sum === null) return u;
  return {
    promptTokens: addTokenCounts(sum.promptTokens, u.promptTokens),
    completionTokens: addTokenCounts(sum.completionTokens, u.completionTokens),
    cachedTokens: addTokenCounts(sum.cachedTokens, u.cachedTokens),
    cacheWriteTokens: addTokenCounts(sum.cacheWriteTokens, u.cacheWriteTokens),
    reasoningTokens: addTokenCounts(sum.reasoningTokens, u.reasoningTokens),
    source: 'upstream',
  };
}

/**
 * Prompt plus completion tokens (OpenAI's `total_tokens`), a count not reported read as 0; 0 for
 * no usage. Cached, cache-write and reasoning tokens are inside these two, not added again.
 */
export function totalTokens(usage: Usage | null): number {
  return (usage?.promptTokens ?? 0) + (usage?.completionTokens ?? 0);
}

/**
 * Prompt tokens neither read from nor written to a prompt cache (Anthropic's `input_tokens`):
 * `promptTokens - cachedTokens - cacheWriteTokens`, a count not reported read as 0, never below 0.
 */
export function uncachedPromptTokens(usage: Usage | null): number {
  return Math.max(0, (usage?.promptTokens ?? 0) - (usage?.cachedTokens ?? 0) - (usage?.cacheWriteTokens ?? 0));
}
