import type { Usage } from '../../core/chat-types.js';
import { reportedCount } from '../../accounting/usage-bounds.js';
import type { BedrockUsageWire } from './bedrock-wire-types.js';

/** Counts pass as reported: clampUsage (accounting/usage-bounds.ts) bounds them, one rule for every kind. */
const count = reportedCount;

/**
 * Convert a Bedrock `usage` object (tokens; a Converse answer's, or a ConverseStream `metadata`
 * event's) to the gateway's {@link Usage}:
 * - `promptTokens` = `inputTokens` + `cacheReadInputTokens` + `cacheWriteInputTokens` (Bedrock's
 *   `inputTokens` counts only the uncached part, as Anthropic's does; OpenAI's `prompt_tokens`
 *   includes cached tokens);
 * - `cachedTokens` = `cacheReadInputTokens`, `cacheWriteTokens` = `cacheWriteInputTokens` (the
 *   older `…InputTokenCount` names when only they are present);
 * - `completionTokens` = `outputTokens` (reasoning included); `reasoningTokens` is never
 *   reported by Converse: null.
 * A field the upstream did not report stays `null` (not 0). Returns null when neither input nor
 * output counts are present.
 * @see https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_TokenUsage.html
 */
export function convertBedrockUsage(usage: BedrockUsageWire | null | undefined): Usage | null {
  if (!usage || typeof usage !== 'object') return null;
  const input = count(usage.inputTokens);
  const cacheRead = count(usage.cacheReadInputTokens) ?? count(usage.cacheReadInputTokenCount);
  const cacheWrite = count(usage.cacheWriteInputTokens) ?? count(usage.cacheWriteInputTokenCount);
  const output = count(usage.outputTokens);
  const promptTokens = input === null && cacheRead === null && cacheWrite === null ? null : (input ?? 0) + (cacheRead ?? 0) + (cacheWrite ?? 0);
  if (promptTokens === null && output === null) return null;
  return { promptTokens, completionTokens: output, cachedTokens: cacheRead, cacheWriteTokens: cacheWrite, reasoningTokens: null, source: 'upstream' };
}
