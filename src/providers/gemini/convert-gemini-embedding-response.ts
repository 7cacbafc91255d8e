import type { EmbeddingResult } from '../../core/embedding-types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { GeminiBatchEmbedResponse } from './gemini-wire-types.js';

/**
 * Parse a `batchEmbedContents` answer: `embeddings[i].values` is the vector of input `i`.
 * Gemini reports no token counts there, so usage is null ("not reported": the gateway
 * estimates it and marks it estimated).
 * @throws GatewayError `upstream_invalid_response` when `embeddings` is missing or an entry has
 *   no array of numbers.
 * @see https://ai.google.dev/api/embeddings#response-body_1
 */
export function convertGeminiEmbeddingResponse(providerId: string, body: unknown): EmbeddingResult {
  const list = (body as GeminiBatchEmbedResponse | null)?.embeddings;
  if (!Array.isArray(list)) {
    throw new GatewayError('upstream_invalid_response', `${providerId}: batchEmbedContents response has no embeddings array`, { metadata: { provider: providerId } });
  }
  const embeddings = list.map((item, i) => {
    const values = item?.values;
    if (!Array.isArray(values) || !values.every((v) => typeof v === 'number')) {
      throw new GatewayError('upstream_invalid_response', `${providerId}: batchEmbedContents embedding ${i} has no values`, { metadata: { provider: providerId } });
    }
    return values;
  });
  return { embeddings, usage: null };
}
