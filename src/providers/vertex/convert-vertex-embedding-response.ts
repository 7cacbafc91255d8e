import type { EmbeddingResult } from '../../core/embedding-types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { convertVertexEmbeddingUsage } from './convert-vertex-usage.js';
import type { VertexPredictEmbeddingResponse } from './vertex-wire-types.js';

/**
 * Parse a text-embedding `:predict` answer: `predictions[i].embeddings.values` is the vector of
 * input `i`; usage from the token counts of `statistics` ({@link convertVertexEmbeddingUsage}).
 * @throws GatewayError `upstream_invalid_response` when `predictions` is missing or an entry has
 *   no array of numbers.
 * @see https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/text-embeddings-api#response_body
 */
export function convertVertexEmbeddingResponse(providerId: string, body: unknown): EmbeddingResult {
  const list = (body as VertexPredictEmbeddingResponse | null)?.predictions;
  if (!Array.isArray(list)) {
    throw new GatewayError('upstream_invalid_response', `${providerId}: predict response has no predictions array`, { metadata: { provider: providerId } });
  }
  const embeddings = list.map((item, i) => {
    const values = item?.embeddings?.values;
    if (!Array.isArray(values) || !values.every((v) => typeof v === 'number')) {
      throw new GatewayError('upstream_invalid_response', `${providerId}: predict prediction ${i} has no embeddings.values`, { metadata: { provider: providerId } });
    }
    return values as number[];
  });
  return { embeddings, usage: convertVertexEmbeddingUsage(list) };
}
