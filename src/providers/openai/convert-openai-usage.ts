import type { Usage } from '../../core/chat-types.js';
import { reportedCount } from '../../accounting/usage-bounds.js';
import type { OpenAIUsage } from './openai-wire-types.js';

/** Counts pass as reported: clampUsage (accounting/usage-bounds.ts) bounds them, one rule for every kind. */
const count = reportedCount;

/**
 * Convert an OpenAI-format `usage` object. Fields the upstream did not report stay `null`
 * (not 0). `prompt_tokens` includes cached tokens; `completion_tokens` includes reasoning.
 * @see https://platform.openai.com/docs/api-reference/chat/object#chat/object-usage
 */
export function convertOpenAIUsage(usage: OpenAIUsage | null | undefined): Usage | null {
  if (!usage || typeof usage !== 'object') return null;
  const promptTokens = count(usage.prompt_tokens);
  const completionTokens = count(usage.completion_tokens);
  if (promptTokens === null && completionTokens === null) return null;
  return {
    promptTokens,
    completionTokens,
    cachedTokens: count(usage.prompt_tokens_details?.cached_tokens) ?? count(usage.prompt_cache_hit_tokens),
    cacheWriteTokens: count(usage.prompt_tokens_details?.cache_write_tokens),
    reasoningTokens: count(usage.completion_tokens_details?.reasoning_tokens),
    source: 'upstream',
  };
}
