import type { ProviderConfig } from '../../config/schema.js';
import type { ProviderAdapter } from '../types.js';
import { parseAnthropicErrorResponse } from './anthropic-error.js';
import { createAnthropicStreamTransform } from './anthropic-stream-transform.js';
import { convertAnthropicResponse } from './convert-anthropic-response.js';
import { convertToAnthropicRequest } from './convert-to-anthropic-request.js';
import { ANTHROPIC_MESSAGES_LANE } from './native/messages.js';

/**
 * The adapter for provider kind `anthropic`: the Anthropic Messages API
 * (`POST {base_url}/v1/messages`), converted from and to the OpenAI chat format. Chat only:
 * legacy completions reach it as one user message.
 * @see https://docs.anthropic.com/en/api/messages
 */
export function createAnthropicAdapter(provider: ProviderConfig): ProviderAdapter {
  const providerId = provider.id;
  return {
    native: { messages: ANTHROPIC_MESSAGES_LANE },
    buildChatCall: (req, target, stream) => convertToAnthropicRequest(req, target, stream),
    parseResult: (body) => convertAnthropicResponse(providerId, body),
    createStreamTransform: () => createAnthropicStreamTransform(providerId),
    parseErrorResponse: (status, headers, bodyText) => parseAnthropicErrorResponse(providerId, status, headers, bodyText),
  };
}
