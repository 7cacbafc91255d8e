import type { NativeLanes, ProviderAdapter } from '../types.js';
import { convertOpenAIResponse } from './convert-openai-response.js';
import { convertToOpenAIChatRequest } from './convert-to-openai-request.js';
import { OPENAI_COMPLETIONS_LANE } from './native/completions.js';
import { parseOpenAIErrorResponse } from './openai-error.js';
import { createOpenAIStreamTransform } from './openai-stream-transform.js';
import { convertOpenAIEmbeddingResponse, convertToOpenAIEmbeddingRequest } from './openai-embeddings.js';
import { convertOpenAIResponsesResult, createOpenAIResponsesStreamTransform, OPENAI_RESPONSES_LANE } from './native/responses.js';

/** Legacy completions and Responses go natively to endpoints that serve them (native/). */
const OPENAI_NATIVE: NativeLanes = { completions: OPENAI_COMPLETIONS_LANE, responses: OPENAI_RESPONSES_LANE };

/**
 * The adapter for provider kind `openai`: any OpenAI-compatible server (OpenAI, vLLM,
 * llama.cpp, Ollama, Groq, OpenRouter …).
 */
export function createOpenAIAdapter(providerId: string): ProviderAdapter {
  return {
    buildChatCall: (req, target, stream) => convertToOpenAIChatRequest(req, target, stream),
    native: OPENAI_NATIVE,
    buildEmbeddingCall: (req, target) => convertToOpenAIEmbeddingRequest(req, target),
    parseEmbeddingResult: (body) => convertOpenAIEmbeddingResponse(providerId, body),
    parseResult: (body, operation) => (operation === 'responses' ? convertOpenAIResponsesResult(providerId, body) : convertOpenAIResponse(providerId, body, operation)),
    createStreamTransform: (operation) => (operation === 'responses' ? createOpenAIResponsesStreamTransform(providerId) : createOpenAIStreamTransform(providerId, operation)),
    parseErrorResponse: (status, headers, bodyText) => parseOpenAIErrorResponse(providerId, status, headers, bodyText),
  };
}
