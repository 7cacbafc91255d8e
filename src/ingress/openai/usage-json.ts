import type { Usage } from '../../core/chat-types.js';
import { totalTokens } from '../../core/usage-arithmetic.js';

/** OpenAI `usage` object as the gateway emits it; `cost` is USD (extension field). */
export interface UsageJson {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens: number; cache_write_tokens?: number };
  completion_tokens_details?: { reasoning_tokens: number };
  cost?: number;
}

/**
 * Render usage for the wire. Detail objects appear only when the upstream reported them, so
 * "not reported" never shows as 0. The three totals are always numbers (0 when unknown).
 */
export function usageToJson(usage: Usage | null, costUsd?: number): UsageJson {
  const prompt = usage?.promptTokens ?? 0;
  const completion = usage?.completionTokens ?? 0;
  const out: UsageJson = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: totalTokens(usage) };
  if (usage?.cachedTokens != null || usage?.cacheWriteTokens != null) {
    out.prompt_tokens_details = { cached_tokens: usage.cachedTokens ?? 0 };
    if (usage.cacheWriteTokens != null) out.prompt_tokens_details.cache_write_tokens = usage.cacheWriteTokens;
  }
  if (usage?.reasoningTokens != null) out.completion_tokens_details = { reasoning_tokens: usage.reasoningTokens };
  if (costUsd !== undefined) out.cost = costUsd;
  return out;
}
