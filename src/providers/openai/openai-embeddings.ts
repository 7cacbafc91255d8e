import type { EmbeddingRequest, EmbeddingResult } from '../../core/embedding-types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { ProviderTarget, UpstreamCall } from '../types.js';
import { convertOpenAIUsage } from './convert-openai-usage.js';
import { OPENAI_SITE, type OpenAIWireSite } from './convert-to-openai-request.js';
import type { OpenAIUsage } from './openai-wire-types.js';

/**
 * The upstream body of an embeddings call (`POST /embeddings`): the client's own fields, with
 * the endpoint's upstream model name. `site`: where the call goes and how it authenticates
 * (default: kind `openai`'s).
 * @see https://platform.openai.com/docs/api-reference/embeddings/create
 */
export function convertToOpenAIEmbeddingRequest(req: EmbeddingRequest, target: ProviderTarget, site: OpenAIWireSite = OPENAI_SITE): UpstreamCall {
  const body: Record<string, unknown> = { model: site.model(target), input: req.input };
  if (req.dimensions !== undefined) body.dimensions = req.dimensions;
  if (req.encoding_format !== undefined) body.encoding_format = req.encoding_format;
  if (req.user !== undefined) body.user = req.user;
  return { url: site.url(target, '/embeddings'), headers: site.headers(target), body: JSON.stringify(body), dropped: [] };
}

interface OpenAIEmbeddingResponse {
  data?: Array<{ index?: number; embedding?: number[] | string }>;
  usage?: OpenAIUsage | null;
}

/**
 * Parse an embeddings response: the vectors in input order (by `index`), and usage (embeddings
 * report `prompt_tokens` only: completion tokens stay "not reported").
 * @throws GatewayError `upstream_invalid_response` when `data` is missing or a vector is.
 * @see https://platform.openai.com/docs/api-reference/embeddings/object
 */
export function convertOpenAIEmbeddingResponse(providerId: string, body: unknown): EmbeddingResult {
  const data = (body as OpenAIEmbeddingResponse | null)?.data;
  if (!Array.isArray(data)) {
    throw new GatewayError('upstream_invalid_response', `${providerId}: embeddings response has no data array`, { metadata: { provider: providerId } });
  }
  const embeddings: Array<number[] | string> = new Array(data.length);
  data.forEach((item, i) => {
    const index = typeof item?.index === 'number' ? item.index : i;
    if (item?.embedding === undefined || index < 0 || index >= data.length) {
      throw new GatewayError('upstream_invalid_response', `${providerId}: embeddings response item ${i} has no vector or a bad index`, { metadata: { provider: providerId } });
    }
    embeddings[index] = item.embedding;
  });
  for (let i = 0; i < embeddings.length; i++) {
    if (embeddings[i] === undefined) throw new GatewayError('upstream_invalid_response', `${providerId}: embeddings response has no vector at index ${i}`, { metadata: { provider: providerId } });
  }
  return { embeddings, usage: convertOpenAIUsage((body as OpenAIEmbeddingResponse).usage) };
}
