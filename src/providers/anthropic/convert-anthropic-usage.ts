import type { Usage } from '../../core/chat-types.js';
import { reportedCount } from '../../accounting/usage-bounds.js';
import type { AnthropicUsageWire } from './anthropic-wire-types.js';

/** Counts pass as reported: clampUsage (accounting/usage-bounds.ts) bounds them, one rule for every kind. */
const count = reportedCount;

/**
 * Convert an Anthropic `usage` object (tokens) to the gateway's {@link Usage}:
 * - `promptTokens` = `input_tokens` + `cache_read_input_tokens` + `cache_creation_input_tokens`
 *   (Anthropic's `input_tokens` counts only the uncached part; OpenAI's `prompt_tokens`
 *   includes cached tokens);
 * - `cachedTokens` = `cache_read_input_tokens`; `cacheWriteTokens` = `cache_creation_input_tokens`;
 * - `completionTokens` = `output_tokens` (thinking included);
 * - `reasoningTokens` = `output_tokens_details.thinking_tokens`, null when not reported.
 * A field the upstream did not report stays `null` (not 0). Returns null when neither input
 * nor output counts are present.
 * @see https://docs.anthropic.com/en/api/messages#response-usage
 */
export function convertAnthropicUsage(usage: AnthropicUsageWire | null | undefined): Usage | null {
  if (!usage || typeof usage !== 'object') return null;
  const input = count(usage.input_tokens);
  const cacheRead = count(usage.cache_read_input_tokens);
  const cacheWrite = count(usage.cache_creation_input_tokens);
  const output = count(usage.output_tokens);
  const promptTokens = input === null && cacheRead === null && cacheWrite === null ? null : (input ?? 0) + (cacheRead ?? 0) + (cacheWrite ?? 0);
  if (promptTokens === null && output === null) return null;
  return {
    promptTokens,
    completionTokens: output,
    cachedTokens: cacheRead,
    cacheWriteTokens: cacheWrite,
    reasoningTokens: count(usage.output_tokens_details?.thinking_tokens),
    source: 'upstream',
  };
}

/**
 * Fold a later usage report over an earlier one: fields present in `next` win. Stream usage is
 * cumulative — `message_start` carries the input and cache counts, each `message_delta` the
 * running output total (and may restate the input counts).
 * @see https://docs.anthropic.com/en/docs/build-with-claude/streaming#event-types
 */
export function mergeAnthropicUsage(prev: AnthropicUsageWire | undefined, next: AnthropicUsageWire | null | undefined): AnthropicUsageWire | undefined {
  if (!next || typeof next !== 'object') return prev;
  const merged: AnthropicUsageWire = { ...prev };
  for (const [key, value] of Object.entries(next)) if (value !== null && value !== undefined) merged[key] = value;
  return merged;
}
