import type { Usage } from '../../core/chat-types.js';
import { reportedCount } from '../../accounting/usage-bounds.js';
import type { GeminiUsageMetadata } from './gemini-wire-types.js';

/** Counts pass as reported: clampUsage (accounting/usage-bounds.ts) bounds them, one rule for every kind. */
const count = reportedCount;

/**
 * Convert Gemini `usageMetadata` (token counts) into {@link Usage}:
 *
 * - `promptTokens` = `promptTokenCount` (cached content included) + `toolUsePromptTokenCount`;
 * - `completionTokens` = `candidatesTokenCount` + `thoughtsTokenCount` (OpenAI's completion
 *   count includes reasoning; Gemini's candidates count does not);
 * - `cachedTokens` = `cachedContentTokenCount`; `reasoningTokens` = `thoughtsTokenCount`;
 * - `cacheWriteTokens`: Gemini reports none (null).
 *
 * Returns null when the metadata carries neither a prompt nor an output count (early stream
 * chunks send only `trafficType`). Once one of them is there, proto3 JSON's omission of zero
 * values applies to the other counts of the sum: an absent `candidatesTokenCount` or
 * `thoughtsTokenCount` is 0 in the total. The detail counts (`cachedTokens`,
 * `reasoningTokens`) stay null when absent: "not reported".
 * @see https://ai.google.dev/api/generate-content#UsageMetadata
 */
export function convertGeminiUsage(meta: GeminiUsageMetadata | null | undefined): Usage | null {
  if (!meta || typeof meta !== 'object') return null;
  const prompt = count(meta.promptTokenCount);
  const candidates = count(meta.candidatesTokenCount);
  const thoughts = count(meta.thoughtsTokenCount);
  if (prompt === null && candidates === null && thoughts === null) return null;
  return {
    promptTokens: (prompt ?? 0) + (count(meta.toolUsePromptTokenCount) ?? 0),
    completionTokens: (candidates ?? 0) + (thoughts ?? 0),
    cachedTokens: count(meta.cachedContentTokenCount),
    cacheWriteTokens: null,
    reasoningTokens: thoughts,
    source: 'upstream',
  };
}
