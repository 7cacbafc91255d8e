import type { ProviderConfig } from '../../config/schema.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { ProviderAdapter } from '../types.js';
import { convertAnthropicResponse } from '../anthropic/convert-anthropic-response.js';
import { convertGeminiResponse } from '../gemini/convert-gemini-response.js';
import { requestImageFetcher } from '../gemini/fetch-image.js';
import { convertToVertexAnthropicRequest, convertToVertexGeminiRequest, type VertexSettings } from './convert-to-vertex-request.js';
import { convertToVertexEmbeddingRequest } from './convert-to-vertex-embedding-request.js';
import { convertVertexEmbeddingResponse } from './convert-vertex-embedding-response.js';
import { vertexGenerateContentLane } from './native/generate-content.js';
import { vertexMessagesLane } from './native/messages.js';
import { createVertexCredentials } from './vertex-credentials.js';
import { parseVertexErrorResponse } from './vertex-error.js';
import { createVertexStreamTransform } from './vertex-stream-transform.js';

/**
 * The adapter for provider kind `vertex` (Google Cloud Vertex AI, per project and location).
 * Its credential (vertex-credentials.ts) is built here, once per provider; every call awaits its
 * cached token. By the provider's `vertex.publisher`:
 * - `google`: Gemini models through `:generateContent` / `:streamGenerateContent?alt=sse` with the
 *   gemini kind's conversions, parsers and stream transform (image URLs fetched with the
 *   provider's `image_fetch` settings); the Gemini API's pass-through lane
 *   (native/generate-content.ts); embeddings through `:predict` (text-embedding models);
 * - `anthropic`: Claude models through `:rawPredict` / `:streamRawPredict`: the Messages API's
 *   pass-through lane (native/messages.ts), the other client APIs translated with the anthropic
 *   kind's conversion; no embeddings.
 * Errors are read in either envelope (vertex-error.ts).
 * @see https://cloud.google.com/vertex-ai/generative-ai/docs/reference/rest
 */
export function createVertexAdapter(provider: ProviderConfig): ProviderAdapter {
  const providerId = provider.id;
  const vertex = provider.vertex;
  if (!vertex) throw new GatewayError('provider_misconfigured', `${providerId}: a provider of kind "vertex" needs its "vertex" settings (project, location)`);
  const settings: VertexSettings = vertex;
  const credentials = createVertexCredentials(providerId, { key_file: vertex.key_file, quota_project: vertex.quota_project });
  const parseErrorResponse: ProviderAdapter['parseErrorResponse'] = (status, headers, bodyText) => parseVertexErrorResponse(providerId, status, headers, bodyText);
  const createStreamTransform = () => createVertexStreamTransform(providerId, settings.publisher);
  if (settings.publisher === 'anthropic') {
    return {
      native: { messages: vertexMessagesLane(settings, credentials) },
      buildChatCall: (req, target, stream) => convertToVertexAnthropicRequest(req, target, stream, settings, credentials),
      parseResult: (body) => convertAnthropicResponse(providerId, body),
      createStreamTransform,
      parseErrorResponse,
    };
  }
  return {
    native: { gemini: vertexGenerateContentLane(settings, credentials) },
    // One fetcher per request: its image count and byte caps are per request.
    buildChatCall: (req, target, stream) => convertToVertexGeminiRequest(req, target, stream, settings, credentials, requestImageFetcher(provider.image_fetch)),
    buildEmbeddingCall: (req, target) => convertToVertexEmbeddingRequest(req, target, settings, credentials),
    parseEmbeddingResult: (body) => convertVertexEmbeddingResponse(providerId, body),
    parseResult: (body) => convertGeminiResponse(providerId, body),
    createStreamTransform,
    parseErrorResponse,
  };
}
