import type { ToolCall } from '../../core/chat-types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { newToolCallId } from '../../util/ids.js';
import type { ChatResult } from '../../core/chat-result.js';
import type { UpstreamOperation } from '../types.js';
import { convertOpenAIUsage } from './convert-openai-usage.js';
import { inBandOpenAIError } from './openai-error.js';
import { mapOpenAIFinishReason } from './map-openai-finish-reason.js';
import type { OpenAIResponseWire } from './openai-wire-types.js';
import { readOpenAIContent } from './read-openai-content.js';

/**
 * Convert a complete OpenAI-compatible response (chat or legacy completion) into a
 * {@link ChatResult}. Tool-call arguments are always JSON text (`"{}"` when empty).
 * @throws GatewayError when the body carries an `error` (top-level, or in the choice with
 *   `finish_reason: "error"`) or has no choice.
 * @see https://platform.openai.com/docs/api-reference/chat/object
 */
export function convertOpenAIResponse(providerId: string, body: unknown, operation: UpstreamOperation): ChatResult {
  const res = (body ?? {}) as OpenAIResponseWire;
  if (typeof res !== 'object') throw new GatewayError('upstream_invalid_response', `${providerId}: response is not a JSON object`);
  if (res.error) throw inBandOpenAIError(providerId, res.error);
  const choice = Array.isArray(res.choices) ? res.choices[0] : undefined;
  if (!choice) throw new GatewayError('upstream_invalid_response', `${providerId}: response has no choices`, { metadata: { provider: providerId } });
  if (choice.error || choice.finish_reason === 'error') {
    throw inBandOpenAIError(providerId, choice.error ?? { message: 'the upstream ended the generation with finish_reason "error"' });
  }
  const msg = choice.message ?? {};
  const toolCalls: ToolCall[] = (msg.tool_calls ?? []).map((tc) => {
    const args = tc.function?.arguments;
    const text = typeof args === 'string' ? args : args && typeof args === 'object' ? JSON.stringify(args) : '';
    return {
      id: tc.id || newToolCallId(),
      type: 'function',
      function: { name: tc.function?.name ?? '', arguments: text === '' ? '{}' : text },
    };
  });
  const parsed = readOpenAIContent(msg.content);
  const reasoning = (msg.reasoning_content ?? msg.reasoning ?? '') + parsed.reasoning;
  const content = operation === 'text-completion' ? (choice.text ?? '') : msg.content === null || msg.content === undefined ? null : parsed.text;
  return {
    content,
    reasoning: typeof reasoning === 'string' && reasoning !== '' ? reasoning : null,
    refusal: msg.refusal ?? null,
    toolCalls,
    finishReason: mapOpenAIFinishReason(choice.finish_reason, toolCalls.length > 0),
    nativeFinishReason: choice.finish_reason ?? null,
    usage: convertOpenAIUsage(res.usage),
    systemFingerprint: res.system_fingerprint ?? null,
    logprobs: choice.logprobs ?? null,
  };
}
