import type { EmbeddingResult } from '../../core/embedding-types.js';
import { reportedCount } from '../../accounting/usage-bounds.js';
import { GatewayError } from '../../errors/gateway-error.js';

const isVector = (v: unknown): v is number[] => Array.isArray(v) && v.every((x) => typeof x === 'number');

/**
 * Parse an InvokeModel embeddings answer, by its shape (the parser does not see the model):
 * Titan's `{embedding: [...], inputTextTokenCount}` (usage: that count, `source: upstream`) or
 * Cohere's `{embeddings: [[...], ...]}` / `{embeddings: {float: [[...]]}}` (no token count in
 * the body: usage null, so the gateway estimates it).
 * @throws GatewayError `upstream_invalid_response` when the body holds no vectors.
 * @see https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-titan-embed-text.html
 * @see https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-embed.html
 */
export function convertBedrockEmbeddingResponse(providerId: string, body: unknown): EmbeddingResult {
  const b = (body && typeof body === 'object' ? body : {}) as { embedding?: unknown; inputTextTokenCount?: unknown; embeddings?: unknown };
  if (isVector(b.embedding)) {
    const tokens = reportedCount(b.inputTextTokenCount);
    return { embeddings: [b.embedding], usage: tokens === null ? null : { promptTokens: tokens, completionTokens: 0, cachedTokens: null, cacheWriteTokens: null, reasoningTokens: null, source: 'upstream' } };
  }
  const list = Array.isArray(b.embeddings) ? b.embeddings : (b.embeddings as { float?: unknown } | undefined)?.float;
  if (Array.isArray(list) && list.every(isVector)) return { embeddings: list, usage: null };
  throw new GatewayError('upstream_invalid_response', `${providerId}: the embeddings answer has no embedding or embeddings array`, { metadata: { provider: providerId } });
}
