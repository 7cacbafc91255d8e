import type { ChatResult } from '../../core/chat-result.js';
import type { UpstreamOperation } from '../types.js';
import { convertOpenAIResponse } from '../openai/convert-openai-response.js';
import { convertOpenAIResponsesResult } from '../openai/native/responses.js';
import { AzureFilterCollector } from './azure-content-filter.js';
import type { AzureResponseWire } from './azure-wire-types.js';

/**
 * A complete Azure OpenAI answer as a {@link ChatResult}: the `openai` kind's conversion (chat,
 * legacy completions, Responses), with the content filter's `prompt_filter_results` and
 * `content_filter_results` moved to `providerMetadata` for the record (the client's body is
 * rebuilt from the result, so it never carries them). `finish_reason: "content_filter"` is
 * our `content_filter`.
 * @throws GatewayError as the `openai` conversions do (an error body, no choices).
 */
export function convertAzureResponse(providerId: string, body: unknown, operation: UpstreamOperation): ChatResult {
  const result = operation === 'responses' ? convertOpenAIResponsesResult(providerId, body) : convertOpenAIResponse(providerId, body, operation);
  if (operation === 'responses' || body === null || typeof body !== 'object') return result;
  const filter = new AzureFilterCollector();
  filter.read(body as AzureResponseWire);
  const meta = filter.metadata();
  return meta ? { ...result, providerMetadata: { ...meta } } : result;
}
