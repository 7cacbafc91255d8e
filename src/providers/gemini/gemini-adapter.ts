import type { ProviderConfig } from '../../config/schema.js';
import type { ProviderAdapter } from '../types.js';
import { GEMINI_GENERATE_CONTENT_LANE } from './native/generate-content.js';
import { convertGeminiEmbeddingResponse } from './convert-gemini-embedding-response.js';
import { convertGeminiResponse } from './convert-gemini-response.js';
import { convertToGeminiEmbeddingRequest } from './convert-to-gemini-embedding-request.js';
import { convertToGeminiRequest } from './convert-to-gemini-request.js';
import { requestImageFetcher } from './fetch-image.js';
import { parseGeminiErrorResponse } from './gemini-error.js';
import { createGeminiStreamTransform } from './gemini-stream-transform.js';

/**
 * The adapter for provider kind `gemini`: the Gemini API's `generateContent` and
 * `streamGenerateContent?alt=sse`, converted from and to the OpenAI chat format; legacy
 * completions reach it as one user message. The Gemini API's own requests go through as sent
 * (native/generate-content.ts). Image URLs are downloaded with the provider's
 * `image_fetch` settings, capped per request. Embeddings (endpoints with `embeddings: true`) go
 * through `batchEmbedContents`, text inputs only, with estimated usage.
 * @see https://ai.google.dev/api/generate-content
 * @see https://ai.google.dev/api/embeddings
 */
export function createGeminiAdapter(provider: ProviderConfig): ProviderAdapter {
  return {
    native: { gemini: GEMINI_GENERATE_CONTENT_LANE },
    // One fetcher per request: its image count and byte caps are per request.
    buildChatCall: (req, target, stream) => convertToGeminiRequest(req, target, stream, requestImageFetcher(provider.image_fetch)),
    buildEmbeddingCall: convertToGeminiEmbeddingRequest,
    parseEmbeddingResult: (body) => convertGeminiEmbeddingResponse(provider.id, body),
    parseResult: (body) => convertGeminiResponse(provider.id, body),
    createStreamTransform: () => createGeminiStreamTransform(provider.id),
    parseErrorResponse: (status, headers, bodyText) => parseGeminiErrorResponse(provider.id, status, headers, bodyText),
  };
}
