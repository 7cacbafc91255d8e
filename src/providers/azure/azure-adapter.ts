import type { ProviderConfig } from '../../config/schema.js';
import type { ProviderAdapter } from '../types.js';
import { convertOpenAIEmbeddingResponse } from '../openai/openai-embeddings.js';
import { convertAzureResponse } from './convert-azure-response.js';
import { convertToAzureChatRequest, convertToAzureEmbeddingRequest } from './convert-to-azure-request.js';
import { createAzureAuth, type AzureAuth } from './azure-credentials.js';
import { parseAzureErrorResponse } from './azure-error.js';
import { createAzureStreamTransform } from './azure-stream-transform.js';
import { azureCompletionsLane } from './native/completions.js';
import { azureResponsesLane } from './native/responses.js';

/**
 * The adapter for provider kind `azure` (Azure OpenAI / Foundry): OpenAI's wire at Azure's URLs
 * (convert-to-azure-request.ts) with `api-key` or Entra ID auth (azure-credentials.ts). Chat is
 * translated; legacy completions (endpoints with `supports_text_completions`) and Responses
 * (every endpoint) go natively; embeddings. Built once per provider (pipeline/state/runtime.ts),
 * so `auth`, the one state it holds, caches the provider's token for as long as the provider
 * lives; the conversions stay pure. `auth` is for tests (a credential with its own options).
 */
export function createAzureAdapter(provider: ProviderConfig, auth: AzureAuth = createAzureAuth(provider)): ProviderAdapter {
  const id = provider.id;
  return {
    buildChatCall: (req, target, stream) => convertToAzureChatRequest(req, target, stream, auth),
    native: { completions: azureCompletionsLane(auth), responses: azureResponsesLane(auth) },
    buildEmbeddingCall: (req, target) => convertToAzureEmbeddingRequest(req, target, auth),
    parseEmbeddingResult: (body) => convertOpenAIEmbeddingResponse(id, body),
    parseResult: (body, operation) => convertAzureResponse(id, body, operation),
    createStreamTransform: (operation) => createAzureStreamTransform(id, operation),
    parseErrorResponse: (status, headers, bodyText) => parseAzureErrorResponse(id, status, headers, bodyText),
  };
}
