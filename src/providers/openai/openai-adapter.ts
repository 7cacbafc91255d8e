import type { ProviderAdapter } from '../types.js';
import { convertOpenAIResponse } from './convert-openai-response.js';
import { convertToOpenAIChatRequest, convertToOpenAICompletionRequest } from './convert-to-openai-request.js';
import { parseOpenAIErrorResponse } from './openai-error.js';
import { createOpenAIStreamTransform } from './openai-stream-transform.js';
import { convertOpenAIEmbeddingResponse, convertToOpenAIEmbeddingRequest } from './openai-embeddings.js';
import { convertOpenAIResponsesResult, convertToOpenAIResponsesRequest, createOpenAIResponsesStreamTransform } from './openai-responses.js';

/**
 * The adapter for provider kind `openai`: any OpenAI-compatible server (OpenAI, vLLM,
 * llama.cpp, Ollama, Groq, OpenRouter …).
 */
export function createOpenAIAdapter(providerId: string): ProviderAdapter {
  return {
    buildChatCall: (req, target, stream) => convertToOpenAIChatRequest(req, target, stream),
    buildCompletionCall: (req, target, stream) => convertToOpenAICompletionRequest(req, target, stream),
    buildEmbeddingCall: (req, target) => convertToOpenAIEmbeddingRequest(req, target),
    parseEmbeddingResult: (body) => convertOpenAIEmbeddingResponse(providerId, body),
    buildResponsesCall: (req, target, stream) => convertToOpenAIResponsesRequest(req, target, stream),
    parseResult: (body, operation) => (operation === 'responses' ? convertOpenAIResponsesResult(providerId, body) : convertOpenAIResponse(providerId, body, operation)),
    createStreamTransform: (operation) => (operation === 'responses' ? createOpenAIResponsesStreamTransform(providerId) : createOpenAIStreamTransform(providerId, operation)),
    parseErrorResponse: (status, headers, bodyText) => parseOpenAIErrorResponse(providerId, status, headers, bodyText),
  };
}
