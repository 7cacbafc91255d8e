import type { Usage } from '../../core/chat-types.js';
import type { VertexEmbeddingPrediction } from './vertex-wire-types.js';

/**
 * Usage on Vertex. Gemini models report the Gemini API's `usageMetadata` (read by the gemini
 * kind's `convertGeminiUsage`), Claude models the Messages API's `usage` (the anthropic kind's
 * `convertAnthropicUsage`); both are reused as they are. Only the text-embedding `:predict`
 * answer is Vertex's own: each prediction's `embeddings.statistics.token_count`.
 */

/**
 * The prompt tokens of a `:predict` embeddings answer: the sum of every prediction's
 * `statistics.token_count` (`source: upstream`); null ("not reported": the gateway estimates
 * it) when any prediction lacks a count.
 */
export function convertVertexEmbeddingUsage(predictions: readonly VertexEmbeddingPrediction[]): Usage | null {
  let total = 0;
  for (const p of predictions) {
    const n = p.embeddings?.statistics?.token_count;
    if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) return null;
    total += n;
  }
  return { promptTokens: total, completionTokens: 0, cachedTokens: null, cacheWriteTokens: null, reasoningTokens: null, source: 'upstream' };
}
