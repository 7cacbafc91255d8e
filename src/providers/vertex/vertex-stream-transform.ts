import type { StreamTransform } from '../types.js';
import { createAnthropicStreamTransform } from '../anthropic/anthropic-stream-transform.js';
import { createGeminiStreamTransform } from '../gemini/gemini-stream-transform.js';
import type { VertexPublisher } from './vertex-wire-types.js';

/**
 * A stream transform for one Vertex stream: `:streamGenerateContent?alt=sse` (publisher `google`)
 * sends Gemini's SSE (`data: <GenerateContentResponse>`, cumulative usage, no `[DONE]`), read by
 * the gemini kind's transform; `:streamRawPredict` (publisher `anthropic`) sends the Messages
 * API's events, read by the anthropic kind's.
 */
export function createVertexStreamTransform(providerId: string, publisher: VertexPublisher): StreamTransform {
  return publisher === 'anthropic' ? createAnthropicStreamTransform(providerId) : createGeminiStreamTransform(providerId);
}
